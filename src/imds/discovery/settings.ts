// Settings of IMDS endpoint discovery (config section `imdsDiscovery`), with defaults and units.
import { z } from "zod";

export const defaultLinkLocalAddress = "169.254.169.254";

export const defaultLeaseFiles = {
  dhclient: ["/var/lib/dhcp/dhclient*.leases", "/var/lib/dhclient/dhclient*.leases", "/var/lib/NetworkManager/dhclient-*.lease"],
  networkd: ["/run/systemd/netif/leases/*"],
  networkManager: ["/var/lib/NetworkManager/internal-*.lease", "/run/NetworkManager/devices/*"],
};

const port = z.number().int().min(1).max(65535);
const ipv4 = z.ipv4();

export const activeDhcpSettingsSchema = z
  .object({
    /** Off by default: binding UDP port 68 needs root (or CAP_NET_BIND_SERVICE) and competes with the DHCP client. */
    enabled: z.boolean().default(false),
    /** Interface whose MAC goes into the request (default: the first non-internal IPv4 interface). */
    interface: z.string().min(1).optional(),
    messageType: z.enum(["discover", "inform"]).default("discover"),
    serverAddress: ipv4.default("255.255.255.255"),
    serverPort: port.default(67),
    /** 0 = any free port (tests: the responder answers the port the request came from). */
    clientPort: z.number().int().min(0).max(65535).default(68),
    bindAddress: ipv4.default("0.0.0.0"),
    /** How long to wait for a usable reply, in milliseconds. */
    timeoutMs: z.number().int().min(100).max(60_000).default(3000),
  })
  .strict();

export const imdsDiscoverySettingsSchema = z
  .object({
    /** The address every VM in a virtual network reaches IMDS at. */
    linkLocalAddress: ipv4.default(defaultLinkLocalAddress),
    /** TCP port of IMDS, at the link-local and at any discovered address. */
    port: port.default(80),
    /** Connect timeout of each probe, in milliseconds. */
    probeTimeoutMs: z.number().int().min(50).max(30_000).default(1000),
    /** Discover again after this many consecutive connection failures (0 = never). */
    rediscoverAfterFailures: z.number().int().min(0).default(5),
    /** Backoff between discovery rounds while nothing is found, in milliseconds. */
    retryInitialDelayMs: z.number().int().positive().default(1000),
    retryMaxDelayMs: z.number().int().positive().default(60_000),
    /** Where the Azure Linux agent records the WireServer address. */
    wireServerEndpointFile: z.string().min(1).default("/var/lib/waagent/WireServerEndpoint"),
    /** Lease file patterns (`*` in the file name only). */
    leaseFiles: z
      .object({
        dhclient: z.array(z.string().min(1)).default(defaultLeaseFiles.dhclient),
        networkd: z.array(z.string().min(1)).default(defaultLeaseFiles.networkd),
        networkManager: z.array(z.string().min(1)).default(defaultLeaseFiles.networkManager),
      })
      .strict()
      .default(defaultLeaseFiles),
    activeDhcp: activeDhcpSettingsSchema.default(activeDhcpSettingsSchema.parse({})),
  })
  .strict();

export type ImdsDiscoverySettings = z.infer<typeof imdsDiscoverySettingsSchema>;
export type ActiveDhcpSettings = z.infer<typeof activeDhcpSettingsSchema>;
export const defaultImdsDiscoverySettings: ImdsDiscoverySettings = imdsDiscoverySettingsSchema.parse({});
