// The state one local Event Hubs peer shares between its protocol modules (connection, CBS, management, partitions),
// and the small helpers they all use: node addresses, per-connection grants, settling a delivery apart.
import type { Socket } from "node:net";
import type { Connection, Delivery, Sender } from "rhea";
import type { Logger } from "pino";
import type { HubStore } from "./store.js";
import type { FaultPlan } from "./faults.js";
import { parseNodeAddress, type NodeAddress } from "./addresses.js";
import { rejectedKey, type SettleApart } from "./settle-apart.js";

export interface PeerStats {
  sendsReceived: number;
  sendsAccepted: number;
  sendsRejected: number;
  connectionsOpened: number;
  connectionsCurrent: number;
  connectionsPeak: number;
}

/** One send as the peer saw it: when it arrived (wall clock, ms) and what became of it. */
export interface SendLogEntry {
  readonly atMs: number;
  /** The partition link it came on (undefined: the hub link). */
  readonly partitionId: string | undefined;
  /** `accepted`, `rejected:<condition>`, `detached`, `dropped`, or `pending` until it is settled. */
  outcome: string;
}

/** How many sends the log keeps (the oldest are dropped first). */
export const sendLogLimit = 10_000;

export interface ConnectionState {
  /** Entity paths (lower case) this connection holds a valid token for. */
  readonly grantedPaths: Set<string>;
}

export interface ReceiverStream {
  readonly sender: Sender;
  readonly partitionId: string;
  readonly consumerGroup: string;
  /** The receiver's owner level (`com.microsoft:epoch`), if it asked for exclusive ownership. */
  readonly epoch: number | undefined;
  nextIndex: number;
}

export interface Peer {
  readonly hubName: string;
  /** The SAS key tokens are verified with. */
  readonly sharedAccessKey: string;
  readonly maxMessageSize: number;
  readonly consumerGroups: ReadonlySet<string>;
  readonly createdAt: Date;
  readonly logger: Logger;
  readonly store: HubStore;
  readonly plan: FaultPlan;
  readonly stats: PeerStats;
  /** The latest sends, in arrival order (at most `sendLogLimit`). */
  readonly sendLog: SendLogEntry[];
  readonly connections: Map<Connection, ConnectionState>;
  readonly sockets: Set<Socket>;
  readonly streams: Map<Sender, ReceiverStream>;
  readonly timers: Set<NodeJS.Timeout>;
  /** Every delivery the peer receives is settled through here, so that rhea never merges two outcomes into one range. */
  readonly settleApart: SettleApart;
}

export function stateOf(peer: Peer, connection: Connection): ConnectionState {
  let state = peer.connections.get(connection);
  if (!state) {
    state = { grantedPaths: new Set() };
    peer.connections.set(connection, state);
  }
  return state;
}

export function nodeOf(peer: Peer, address: unknown): NodeAddress {
  return parseNodeAddress(String(address ?? ""), peer.hubName);
}

export function rejectDelivery(peer: Peer, delivery: Delivery, condition: string, description: string): void {
  peer.settleApart.settle(delivery, {
    outcomeKey: rejectedKey(condition, description),
    apply: () => delivery.reject({ condition, description }),
  });
}

/**
 * The error to destroy a socket with. rhea handles a socket's `end` and `error` but not `close`: a plain destroy()
 * would leave the connection's idle-timeout timers (minutes) running and keep the process alive.
 */
export function connectionDropped(): Error {
  return Object.assign(new Error("connection dropped by the local Event Hubs peer"), { code: "ECONNRESET" });
}

export function destroyConnection(connection: Connection): void {
  const socket = (connection as unknown as { socket?: { destroy(error?: Error): void } }).socket;
  socket?.destroy(connectionDropped());
}

/** Application properties with binary values read as UTF-8 text (newer clients send the put-token `type` and `name` as binary). */
export function textProperties(properties: Record<string, unknown> | undefined): Record<string, unknown> {
  const text: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(properties ?? {}))
    text[name] = Buffer.isBuffer(value) ? value.toString("utf8") : value;
  return text;
}
