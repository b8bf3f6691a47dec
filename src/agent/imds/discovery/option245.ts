// DHCP option 245 (the Azure host address, "CloudControlIp"/WireServer: 4 bytes, big-endian IPv4) in the textual
// forms lease files and tools write: dhclient's "a8:3f:81:10", networkd's "A83F8110", or dotted "168.63.129.16".
import { DiscoveryParseError } from "./failure.js";

/** 4 option bytes → dotted IPv4. */
export function ipv4FromOptionBytes(bytes: Uint8Array): string {
  if (bytes.length !== 4)
    throw new DiscoveryParseError("wrong-length", `option 245 has ${bytes.length} bytes, expected 4`);
  return Array.from(bytes).join(".");
}

/** Decodes one textual option 245 value; throws DiscoveryParseError ("malformed" or "wrong-length"). */
export function decodeOption245Text(raw: string): string {
  const text = raw.trim();
  if (text === "") throw new DiscoveryParseError("malformed", "option 245 value is empty");
  if (/^\d{1,3}(\.\d{1,3})+$/.test(text)) {
    const parts = text.split(".").map(Number);
    if (parts.length !== 4)
      throw new DiscoveryParseError("wrong-length", `option 245 "${text}" has ${parts.length} bytes, expected 4`);
    if (parts.some((p) => p > 255))
      throw new DiscoveryParseError("malformed", `option 245 "${text}" is not an IPv4 address`);
    return parts.join(".");
  }
  if (/^[0-9a-f]{1,2}(:[0-9a-f]{1,2})*$/i.test(text)) {
    return ipv4FromOptionBytes(Uint8Array.from(text.split(":").map((h) => parseInt(h, 16))));
  }
  if (/^([0-9a-f]{2})+$/i.test(text)) return ipv4FromOptionBytes(Uint8Array.from(Buffer.from(text, "hex")));
  throw new DiscoveryParseError(
    "malformed",
    `option 245 value "${text.slice(0, 60)}" is neither hex bytes nor a dotted IPv4 address`,
  );
}

/** Strict dotted IPv4 check for addresses given by people (CLOUDCONTROLIP, the registry, the waagent file). */
export function parseIpv4(raw: string): string {
  const text = raw.trim();
  const parts = text.split(".");
  if (parts.length !== 4 || parts.some((p) => !/^\d{1,3}$/.test(p) || Number(p) > 255)) {
    throw new DiscoveryParseError("malformed", `"${text.slice(0, 60)}" is not an IPv4 address`);
  }
  return parts.map(Number).join(".");
}
