// A local DHCP responder for tests and experiments: answers each DHCPDISCOVER/DHCPINFORM it receives on UDP with the
// next reply kind from its script — a proper offer/ack carrying option 245 among other options, or a faulty one
// (another transaction, another MAC, options cut off, shorter than the header, no option 245, a 5-byte option 245,
// no magic cookie, or no answer at all).
import { createSocket, type RemoteInfo, type Socket } from "node:dgram";

export type DhcpReplyKind =
  "ok" | "wrong-xid" | "wrong-mac" | "truncated" | "short" | "no-option-245" | "wrong-length" | "bad-cookie" | "silent";
export const dhcpReplyKinds: readonly DhcpReplyKind[] = [
  "ok",
  "wrong-xid",
  "wrong-mac",
  "truncated",
  "short",
  "no-option-245",
  "wrong-length",
  "bad-cookie",
  "silent",
];

export interface DhcpResponderOptions {
  /** UDP port to listen on (67 on a real network; tests use any free port: 0). */
  port?: number;
  host?: string;
  /** The address option 245 carries (Azure: 168.63.129.16). */
  option245: string;
  /**
   * Reply kinds per request, in order; each request gets all kinds of its entry, one datagram each (so
   * `[["wrong-xid", "ok"]]` answers the first request with a stray reply and then the right one). The last entry repeats.
   */
  script?: DhcpReplyKind[][];
  /** Address offered to the client (yiaddr). */
  offeredAddress?: string;
}

export interface DhcpResponder {
  readonly port: number;
  readonly host: string;
  /** Requests received so far (the raw datagrams). */
  readonly requests: Buffer[];
  close(): Promise<void>;
}

const cookie = Buffer.from([99, 130, 83, 99]);

export async function startDhcpResponder(options: DhcpResponderOptions): Promise<DhcpResponder> {
  const host = options.host ?? "127.0.0.1";
  const script = options.script ?? [["ok"]];
  const requests: Buffer[] = [];
  const socket: Socket = createSocket({ type: "udp4", reuseAddr: true });
  socket.on("message", (message: Buffer, remote: RemoteInfo) => {
    if (message.length < 240 || message[0] !== 1 || !message.subarray(236, 240).equals(cookie)) return; // not a DHCP request
    const kinds = script[Math.min(requests.length, script.length - 1)]!;
    requests.push(message);
    for (const kind of kinds) {
      const reply = buildReply(message, kind, options);
      if (reply) socket.send(reply, remote.port, remote.address);
    }
  });
  await new Promise<void>((resolve, reject) => {
    socket.once("error", reject);
    socket.bind(options.port ?? 0, host, () => {
      socket.off("error", reject);
      resolve();
    });
  });
  return {
    port: socket.address().port,
    host,
    requests,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}

function ipv4Bytes(address: string): number[] {
  return address.split(".").map(Number);
}

/** One reply to `request` of the given kind (undefined for "silent"). */
export function buildReply(
  request: Buffer,
  kind: DhcpReplyKind,
  options: Pick<DhcpResponderOptions, "option245" | "offeredAddress">,
): Buffer | undefined {
  if (kind === "silent") return undefined;
  const requestType = findOption(request, 53)?.[0] ?? 1;
  const reply = Buffer.alloc(240);
  reply[0] = 2; // BOOTREPLY
  reply[1] = 1;
  reply[2] = 6;
  request.copy(reply, 4, 4, 8); // xid
  request.copy(reply, 10, 10, 12); // flags
  request.copy(reply, 12, 12, 16); // ciaddr
  Buffer.from(ipv4Bytes(options.offeredAddress ?? "10.0.0.4")).copy(reply, 16);
  request.copy(reply, 28, 28, 44); // chaddr
  cookie.copy(reply, 236);
  if (kind === "wrong-xid") reply.writeUInt32BE((reply.readUInt32BE(4) + 1) >>> 0, 4);
  if (kind === "wrong-mac") reply[33] = reply[33]! ^ 0xff;
  if (kind === "bad-cookie") reply.fill(0, 236, 240);
  const server = [168, 63, 129, 16];
  const options245 =
    kind === "no-option-245"
      ? []
      : kind === "wrong-length"
        ? [245, 5, ...ipv4Bytes(options.option245), 0]
        : [245, 4, ...ipv4Bytes(options.option245)];
  const body = Buffer.from([
    53,
    1,
    requestType === 8 ? 5 : 2, // DHCPACK for an INFORM, DHCPOFFER for a DISCOVER
    54,
    4,
    ...server, // server identifier
    1,
    4,
    255,
    255,
    255,
    0, // subnet mask
    3,
    4,
    10,
    0,
    0,
    1, // router
    51,
    4,
    0xff,
    0xff,
    0xff,
    0xff, // lease time
    ...options245,
    15,
    8,
    ...Buffer.from("internal"), // domain name
    255,
  ]);
  const full = Buffer.concat([reply, body]);
  // Truncated: the header is whole but option 245's data is cut off mid-way.
  if (kind === "truncated") return full.subarray(0, 240 + body.indexOf(245) + 4);
  // Short: cut inside the fixed header, too short to say whom it is for.
  if (kind === "short") return full.subarray(0, 100);
  return full;
}

function findOption(packet: Buffer, code: number): Buffer | undefined {
  let i = 240;
  while (i < packet.length && packet[i] !== 255) {
    if (packet[i] === 0) {
      i += 1;
      continue;
    }
    const length = packet[i + 1] ?? 0;
    if (packet[i] === code) return packet.subarray(i + 2, i + 2 + length);
    i += 2 + length;
  }
  return undefined;
}
