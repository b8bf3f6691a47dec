// Discovery failures as values: which source, why (a stable reason used as a metric label), and the detail for the log.
import { SefReasonError } from "@sef/errors/sef-error.js";

/** Where an IMDS endpoint candidate came from, in resolution order. */
export type DiscoverySource =
  | "explicit" // --imds-url / SEF_IMDS_URL / imdsUrl in the config file
  | "remembered" // the endpoint that answered before the last restart (store meta)
  | "link-local" // 169.254.169.254: every VM in a virtual network
  | "env" // CLOUDCONTROLIP
  | "registry" // HKLM\Software\CloudControl\CloudControlIp (Windows)
  | "waagent" // the Azure Linux agent's WireServerEndpoint file
  | "dhclient" // ISC dhclient lease files (also NetworkManager's dhclient-*.lease)
  | "networkd" // systemd-networkd lease files
  | "networkmanager" // NetworkManager's own lease and device-state files
  | "dhcp"; // an active DHCPDISCOVER/DHCPINFORM (opt-in, needs privileges)

/** Every source a discovery error can name (the explicit and remembered endpoints are not discovered). */
export const discoveredSources: readonly DiscoverySource[] = [
  "link-local",
  "env",
  "registry",
  "waagent",
  "dhclient",
  "networkd",
  "networkmanager",
  "dhcp",
];

/** Every failure reason, for metrics that exist at 0 from start. */
export const discoveryFailureReasons: readonly DiscoveryFailureReason[] = [
  "unreadable",
  "malformed",
  "no-option-245",
  "wrong-length",
  "expired",
  "not-answering",
  "not-imds",
  "truncated",
  "bad-cookie",
  "wrong-xid",
  "wrong-mac",
  "timeout",
];

export type DiscoveryFailureReason =
  | "unreadable" // the file or command could not be read or run
  | "malformed" // the input does not have the expected shape
  | "no-option-245" // well-formed, but carries no option 245 / address
  | "wrong-length" // option 245 is not exactly 4 bytes
  | "expired" // every lease carrying option 245 has expired
  | "not-answering" // nothing accepts a connection at the address
  | "not-imds" // it accepts a connection but does not answer the Scheduled Events API with a well-formed document
  | "truncated" // a DHCP reply shorter than its header or options
  | "bad-cookie" // a DHCP reply without the magic cookie
  | "wrong-xid" // a DHCP reply for another transaction
  | "wrong-mac" // a DHCP reply for another client hardware address
  | "timeout"; // no usable DHCP reply within the timeout

export interface DiscoveryFailure {
  source: DiscoverySource;
  reason: DiscoveryFailureReason;
  detail: string;
  /** The file the failure is about, when there is one. */
  file?: string;
}

/** Thrown by the pure parsers; the source turns it into a DiscoveryFailure. */
export class DiscoveryParseError extends SefReasonError<DiscoveryFailureReason> {
  override readonly name = "DiscoveryParseError";
  override readonly code = "SEF_ERR_DISCOVERY_PARSE";
}
