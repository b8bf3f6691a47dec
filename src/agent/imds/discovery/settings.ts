// Settings of IMDS endpoint discovery (config section `imdsDiscovery`), with defaults and units.
import * as z from "zod/mini";
import "../../util/zod-locale.js";
import { documented } from "../../util/setting-doc.js";

export const defaultLinkLocalAddress = "169.254.169.254";
/** Where Azure serves IMDS: the link-local address, and the WireServer DHCP option 245 names. */
export const azureImdsAddresses = [defaultLinkLocalAddress, "168.63.129.16"];

export const defaultLeaseFiles = {
  dhclient: [
    "/var/lib/dhcp/dhclient*.leases",
    "/var/lib/dhclient/dhclient*.leases",
    "/var/lib/NetworkManager/dhclient-*.lease",
  ],
  networkd: ["/run/systemd/netif/leases/*"],
  networkManager: ["/var/lib/NetworkManager/internal-*.lease", "/run/NetworkManager/devices/*"],
};

const port = z.number().check(z.int(), z.minimum(1), z.maximum(65535));
const ipv4 = z.ipv4();

export const activeDhcpSettingsSchema = z.strictObject({
  enabled: documented(z._default(z.boolean(), false), {
    description:
      "Send a DHCP request (off by default: binding UDP port 68 needs root or `CAP_NET_BIND_SERVICE` and competes with the DHCP client).",
  }),
  interface: documented(z.optional(z.string().check(z.minLength(1))), {
    description: "Whose MAC (and, for `inform`, address) the request carries.",
    defaultText: "first external IPv4 interface",
  }),
  messageType: documented(z._default(z.enum(["discover", "inform"]), "discover"), {
    description: "`discover` or `inform`.",
  }),
  serverAddress: documented(z._default(ipv4, "255.255.255.255"), { description: "Where the request goes." }),
  serverPort: documented(z._default(port, 67), { description: "Port the request goes to." }),
  clientPort: documented(z._default(z.number().check(z.int(), z.minimum(0), z.maximum(65535)), 68), {
    description: "Port the reply is awaited on (0: any free port, for tests).",
  }),
  bindAddress: documented(z._default(ipv4, "0.0.0.0"), { description: "Address the reply is awaited on." }),
  timeoutMs: documented(z._default(z.number().check(z.int(), z.minimum(100), z.maximum(60_000)), 3000), {
    description: "How long to wait for a usable reply.",
  }),
});

export const imdsDiscoverySettingsSchema = z.strictObject({
  linkLocalAddress: documented(z._default(ipv4, defaultLinkLocalAddress), { description: "The address tried first." }),
  port: documented(z._default(port, 80), { description: "IMDS port at every address." }),
  probeTimeoutMs: documented(z._default(z.number().check(z.int(), z.minimum(50), z.maximum(30_000)), 1000), {
    description: "Connect timeout of each probe.",
  }),
  verifyTimeoutMs: documented(z._default(z.number().check(z.int(), z.minimum(100), z.maximum(180_000)), 10_000), {
    description:
      "Time a discovered or remembered endpoint has to answer the Scheduled Events API with a well-formed document before it is trusted.",
  }),
  rememberAddresses: documented(z._default(z.array(ipv4), azureImdsAddresses), {
    description:
      "Addresses an endpoint found may be remembered at across restarts (Azure's); one found elsewhere is used but never remembered.",
  }),
  rediscoverAfterFailures: documented(z._default(z.number().check(z.int(), z.minimum(0)), 5), {
    description: "Consecutive connection failures before discovering again (0 = never).",
    unit: "failures",
  }),
  retryInitialDelayMs: documented(z._default(z.number().check(z.int(), z.positive()), 1000), {
    description:
      "First backoff between discovery rounds while nothing is found (with jitter: half of it to all of it).",
  }),
  retryMaxDelayMs: documented(z._default(z.number().check(z.int(), z.positive()), 60_000), {
    description: "Longest backoff between discovery rounds.",
  }),
  wireServerEndpointFile: documented(
    z._default(z.string().check(z.minLength(1)), "/var/lib/waagent/WireServerEndpoint"),
    { description: "The Azure Linux agent's record of the WireServer address." },
  ),
  leaseFiles: documented(
    z._default(
      z.strictObject({
        dhclient: documented(z._default(z.array(z.string().check(z.minLength(1))), defaultLeaseFiles.dhclient), {
          description: "ISC dhclient lease file patterns (`*` in the file name only).",
        }),
        networkd: documented(z._default(z.array(z.string().check(z.minLength(1))), defaultLeaseFiles.networkd), {
          description: "systemd-networkd lease file patterns.",
        }),
        networkManager: documented(
          z._default(z.array(z.string().check(z.minLength(1))), defaultLeaseFiles.networkManager),
          { description: "NetworkManager lease and device file patterns." },
        ),
      }),
      defaultLeaseFiles,
    ),
    { description: "DHCP lease files searched for option 245 (`*` in the file name only)." },
  ),
  activeDhcp: documented(z._default(activeDhcpSettingsSchema, activeDhcpSettingsSchema.parse({})), {
    description: "The DHCP query, last of the sources.",
  }),
});

export type ImdsDiscoverySettings = z.infer<typeof imdsDiscoverySettingsSchema>;
export type ActiveDhcpSettings = z.infer<typeof activeDhcpSettingsSchema>;
export const defaultImdsDiscoverySettings: ImdsDiscoverySettings = imdsDiscoverySettingsSchema.parse({});
