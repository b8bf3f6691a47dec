// Settings of IMDS endpoint discovery (config section `imdsDiscovery`), with defaults and units.
import * as z from "zod/mini";
import "../../util/zod-locale.js";

export const defaultLinkLocalAddress = "169.254.169.254";

export const defaultLeaseFiles = {
  dhclient: ["/var/lib/dhcp/dhclient*.leases", "/var/lib/dhclient/dhclient*.leases", "/var/lib/NetworkManager/dhclient-*.lease"],
  networkd: ["/run/systemd/netif/leases/*"],
  networkManager: ["/var/lib/NetworkManager/internal-*.lease", "/run/NetworkManager/devices/*"],
};

const port = z.number().check(z.int(), z.minimum(1), z.maximum(65535));
const ipv4 = z.ipv4();

export const activeDhcpSettingsSchema = z.strictObject({
  /** Off by default: binding UDP port 68 needs root (or CAP_NET_BIND_SERVICE) and competes with the DHCP client. */
  enabled: z._default(z.boolean(), false),
  /** Interface whose MAC goes into the request (default: the first non-internal IPv4 interface). */
  interface: z.optional(z.string().check(z.minLength(1))),
  messageType: z._default(z.enum(["discover", "inform"]), "discover"),
  serverAddress: z._default(ipv4, "255.255.255.255"),
  serverPort: z._default(port, 67),
  /** 0 = any free port (tests: the responder answers the port the request came from). */
  clientPort: z._default(z.number().check(z.int(), z.minimum(0), z.maximum(65535)), 68),
  bindAddress: z._default(ipv4, "0.0.0.0"),
  /** How long to wait for a usable reply, in milliseconds. */
  timeoutMs: z._default(z.number().check(z.int(), z.minimum(100), z.maximum(60_000)), 3000),
});

export const imdsDiscoverySettingsSchema = z.strictObject({
  /** The address every VM in a virtual network reaches IMDS at. */
  linkLocalAddress: z._default(ipv4, defaultLinkLocalAddress),
  /** TCP port of IMDS, at the link-local and at any discovered address. */
  port: z._default(port, 80),
  /** Connect timeout of each probe, in milliseconds. */
  probeTimeoutMs: z._default(z.number().check(z.int(), z.minimum(50), z.maximum(30_000)), 1000),
  /** Discover again after this many consecutive connection failures (0 = never). */
  rediscoverAfterFailures: z._default(z.number().check(z.int(), z.minimum(0)), 5),
  /** Backoff between discovery rounds while nothing is found, in milliseconds. */
  retryInitialDelayMs: z._default(z.number().check(z.int(), z.positive()), 1000),
  retryMaxDelayMs: z._default(z.number().check(z.int(), z.positive()), 60_000),
  /** Where the Azure Linux agent records the WireServer address. */
  wireServerEndpointFile: z._default(z.string().check(z.minLength(1)), "/var/lib/waagent/WireServerEndpoint"),
  /** Lease file patterns (`*` in the file name only). */
  leaseFiles: z._default(
    z.strictObject({
      dhclient: z._default(z.array(z.string().check(z.minLength(1))), defaultLeaseFiles.dhclient),
      networkd: z._default(z.array(z.string().check(z.minLength(1))), defaultLeaseFiles.networkd),
      networkManager: z._default(z.array(z.string().check(z.minLength(1))), defaultLeaseFiles.networkManager),
    }),
    defaultLeaseFiles,
  ),
  activeDhcp: z._default(activeDhcpSettingsSchema, activeDhcpSettingsSchema.parse({})),
});

export type ImdsDiscoverySettings = z.infer<typeof imdsDiscoverySettingsSchema>;
export type ActiveDhcpSettings = z.infer<typeof activeDhcpSettingsSchema>;
export const defaultImdsDiscoverySettings: ImdsDiscoverySettings = imdsDiscoverySettingsSchema.parse({});
