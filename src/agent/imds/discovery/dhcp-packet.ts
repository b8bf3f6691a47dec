// DHCP (RFC 2131) packets for the active query: builds a DHCPDISCOVER or DHCPINFORM that asks for option 245, and
// checks a reply (BOOTREPLY, magic cookie, transaction id, client MAC) before reading option 245 from its options.
import { DiscoveryParseError } from "./failure.js";
import { ipv4FromOptionBytes } from "./option245.js";
import { InternalError } from "@sef/errors/sef-error.js";

export const dhcpMagicCookie = Buffer.from([99, 130, 83, 99]);
const headerBytes = 236;
const optionsOffset = headerBytes + 4;
const minimumRequestBytes = 300; // BOOTP's minimum; some servers ignore shorter requests

export interface DhcpRequestSpec {
  /** 4 random bytes. */
  xid: Buffer;
  /** 6-byte client hardware address. */
  mac: Buffer;
  messageType: "discover" | "inform";
  /** ciaddr for DHCPINFORM (the client's own address). */
  clientAddress?: string;
  /** Ask the server to broadcast its reply (flag 0x8000). */
  broadcast: boolean;
}

export function buildDhcpRequest(spec: DhcpRequestSpec): Buffer {
  if (spec.xid.length !== 4) throw new InternalError("xid must be 4 bytes");
  if (spec.mac.length !== 6) throw new InternalError("mac must be 6 bytes");
  const packet = Buffer.alloc(minimumRequestBytes);
  packet[0] = 1; // BOOTREQUEST
  packet[1] = 1; // Ethernet
  packet[2] = 6; // hardware address length
  spec.xid.copy(packet, 4);
  if (spec.broadcast) packet.writeUInt16BE(0x8000, 10);
  if (spec.clientAddress) Buffer.from(spec.clientAddress.split(".").map(Number)).copy(packet, 12);
  spec.mac.copy(packet, 28);
  dhcpMagicCookie.copy(packet, headerBytes);
  const options = [53, 1, spec.messageType === "discover" ? 1 : 8, 55, 4, 1, 3, 6, 245, 255];
  Buffer.from(options).copy(packet, optionsOffset);
  return packet;
}

export interface DhcpReply {
  /** The address in option 245. */
  option245: string;
  /** Every option present (code → data), for diagnostics. */
  options: Map<number, Buffer>;
}

/**
 * Validates a reply against the request and reads option 245. Throws DiscoveryParseError: "truncated" (shorter than
 * the fixed header, or an option running past the end), "malformed" (not a BOOTREPLY), "bad-cookie", "wrong-xid",
 * "wrong-mac", "no-option-245", "wrong-length".
 */
export function parseDhcpReply(packet: Buffer, request: { xid: Buffer; mac: Buffer }): DhcpReply {
  if (packet.length < optionsOffset)
    throw new DiscoveryParseError(
      "truncated",
      `reply of ${packet.length} bytes is shorter than the ${optionsOffset}-byte DHCP header`,
    );
  if (packet[0] !== 2) throw new DiscoveryParseError("malformed", `op is ${packet[0]}, expected 2 (BOOTREPLY)`);
  if (!packet.subarray(headerBytes, optionsOffset).equals(dhcpMagicCookie))
    throw new DiscoveryParseError("bad-cookie", "reply lacks the DHCP magic cookie");
  const xid = packet.subarray(4, 8);
  if (!xid.equals(request.xid))
    throw new DiscoveryParseError(
      "wrong-xid",
      `reply for transaction ${xid.toString("hex")}, expected ${request.xid.toString("hex")}`,
    );
  const mac = packet.subarray(28, 34);
  if (!mac.equals(request.mac))
    throw new DiscoveryParseError(
      "wrong-mac",
      `reply for client ${formatMac(mac)}, expected ${formatMac(request.mac)}`,
    );
  const options = readOptions(packet);
  const option245 = options.get(245);
  if (option245 === undefined)
    throw new DiscoveryParseError(
      "no-option-245",
      `reply carries options ${[...options.keys()].join(",") || "(none)"} but not 245`,
    );
  return { option245: ipv4FromOptionBytes(option245), options };
}

function readOptions(packet: Buffer): Map<number, Buffer> {
  const options = new Map<number, Buffer>();
  let i = optionsOffset;
  while (i < packet.length) {
    const code = packet[i]!;
    if (code === 0) {
      i += 1;
      continue;
    }
    if (code === 255) return options;
    if (i + 1 >= packet.length)
      throw new DiscoveryParseError("truncated", `option ${code} at offset ${i} has no length byte`);
    const length = packet[i + 1]!;
    if (i + 2 + length > packet.length)
      throw new DiscoveryParseError(
        "truncated",
        `option ${code} at offset ${i} runs ${i + 2 + length - packet.length} bytes past the end`,
      );
    if (!options.has(code)) options.set(code, packet.subarray(i + 2, i + 2 + length));
    i += 2 + length;
  }
  throw new DiscoveryParseError("truncated", "options end without the end option (255)");
}

export function formatMac(mac: Buffer): string {
  return [...mac].map((b) => b.toString(16).padStart(2, "0")).join(":");
}

export function parseMac(text: string): Buffer {
  if (!/^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/i.test(text))
    throw new DiscoveryParseError("malformed", `"${text}" is not a MAC address`);
  return Buffer.from(text.split(":").map((h) => parseInt(h, 16)));
}
