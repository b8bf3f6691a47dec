// The active DHCP query (opt-in): sends one DHCPDISCOVER/DHCPINFORM over UDP and waits, within a deadline, for a reply
// for this transaction and MAC; replies meant for others are reported and skipped, a reply for us without a usable
// option 245 ends the query.
import { createSocket, type Socket } from "node:dgram";
import { randomBytes } from "node:crypto";
import { networkInterfaces } from "node:os";
import type { ActiveDhcpSettings } from "./settings.js";
import { DiscoveryParseError } from "./failure.js";
import { buildDhcpRequest, parseDhcpReply, parseMac } from "./dhcp-packet.js";

export interface DhcpQueryResult {
  address: string;
  /** Replies skipped on the way (another transaction or client, too short to check). */
  skipped: DiscoveryParseError[];
}

/** The MAC and IPv4 address of the configured (or first external IPv4) interface. */
export function pickInterface(name: string | undefined): { mac: Buffer; address: string; name: string } {
  for (const [ifname, addresses] of Object.entries(networkInterfaces())) {
    if (name !== undefined && ifname !== name) continue;
    const v4 = addresses?.find((a) => a.family === "IPv4" && (name !== undefined || !a.internal));
    if (v4) return { mac: parseMac(v4.mac), address: v4.address, name: ifname };
  }
  throw new DiscoveryParseError("unreadable", name ? `no IPv4 interface named ${name}` : "no external IPv4 interface");
}

export async function queryOption245(
  settings: ActiveDhcpSettings,
  onSkipped: (err: DiscoveryParseError) => void,
  signal?: AbortSignal,
): Promise<DhcpQueryResult> {
  const nic = pickInterface(settings.interface);
  const xid = randomBytes(4);
  const broadcast = settings.serverAddress === "255.255.255.255";
  const request = buildDhcpRequest({
    xid,
    mac: nic.mac,
    messageType: settings.messageType,
    clientAddress: settings.messageType === "inform" ? nic.address : undefined,
    broadcast,
  });
  const socket = createSocket({ type: "udp4", reuseAddr: true });
  try {
    await bindClientPort(socket, settings);
    if (broadcast) socket.setBroadcast(true);
    return await sendAndAwaitReply(socket, request, { settings, xid, mac: nic.mac, onSkipped, signal });
  } finally {
    await new Promise<void>((resolve) => socket.close(() => resolve())).catch(() => undefined);
  }
}

/** Binds the DHCP client port (68 needs root or CAP_NET_BIND_SERVICE); a failure says so. */
async function bindClientPort(socket: Socket, settings: ActiveDhcpSettings): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    socket.once("error", reject);
    socket.bind(settings.clientPort, settings.bindAddress, () => {
      socket.off("error", reject);
      resolve();
    });
  }).catch((err: NodeJS.ErrnoException) => {
    throw new DiscoveryParseError(
      "unreadable",
      `cannot bind UDP ${settings.bindAddress}:${settings.clientPort} (${err.code ?? err.message}; needs root or CAP_NET_BIND_SERVICE)`,
    );
  });
}

interface ReplyWait {
  settings: ActiveDhcpSettings;
  xid: Buffer;
  mac: Buffer;
  onSkipped: (err: DiscoveryParseError) => void;
  signal: AbortSignal | undefined;
}

/** Sends the request and resolves with the first reply for this transaction and MAC, within the deadline. */
function sendAndAwaitReply(socket: Socket, request: Buffer, wait: ReplyWait): Promise<DhcpQueryResult> {
  const { settings, xid, mac, onSkipped, signal } = wait;
  const skipped: DiscoveryParseError[] = [];
  return new Promise<DhcpQueryResult>((resolve, reject) => {
    const finish = (fn: () => void): void => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      socket.off("message", onMessage);
      fn();
    };
    const timer = setTimeout(
      () =>
        finish(() =>
          reject(
            new DiscoveryParseError(
              "timeout",
              `no usable DHCP reply within ${settings.timeoutMs} ms (${skipped.length} skipped)`,
            ),
          ),
        ),
      settings.timeoutMs,
    );
    const onAbort = (): void => finish(() => reject(new DiscoveryParseError("timeout", "DHCP query aborted")));
    signal?.addEventListener("abort", onAbort, { once: true });
    const onMessage = (message: Buffer): void => {
      try {
        const reply = parseDhcpReply(message, { xid, mac });
        finish(() => resolve({ address: reply.option245, skipped }));
      } catch (err) {
        if (!(err instanceof DiscoveryParseError)) return finish(() => reject(err));
        // Not ours (or too short to tell): note it and keep listening. Ours but unusable: that is the answer.
        if (
          err.reason === "wrong-xid" ||
          err.reason === "wrong-mac" ||
          (err.reason === "truncated" && message.length < 240)
        ) {
          skipped.push(err);
          onSkipped(err);
        } else {
          finish(() => reject(err));
        }
      }
    };
    socket.on("message", onMessage);
    socket.send(request, settings.serverPort, settings.serverAddress, (err) => {
      if (err)
        finish(() =>
          reject(
            new DiscoveryParseError(
              "unreadable",
              `cannot send to ${settings.serverAddress}:${settings.serverPort} (${(err as NodeJS.ErrnoException).code ?? err.message})`,
            ),
          ),
        );
    });
  });
}
