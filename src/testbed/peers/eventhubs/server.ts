// The local Event Hubs peer: an AMQP 1.0 server (rhea) that the unmodified @azure/event-hubs clients talk to. This
// module holds its options and public surface and wires the protocol modules: connection.ts (container, SASL,
// sockets), cbs.ts ($cbs put-token), management-link.ts ($management READ), partitions.ts (sends, readers).
import rhea from "rhea";
import type { Container, Delivery, EventContext, Message } from "rhea";
import type { Logger } from "pino";
import { silentLogger } from "../../support/logger.js";
import { HubStore, type StoredEvent } from "./store.js";
import { FaultPlan, type SendFault } from "./faults.js";
import { createLocalTlsIdentity } from "./tls.js";
import { installFullLengthPerformatives } from "./full-performatives.js";
import { SettleApart } from "./settle-apart.js";
import { connectionDropped, nodeOf, rejectDelivery, type Peer, type PeerStats, type SendLogEntry } from "./peer.js";
import { createContainer, detachLinks, dropConnections, listenPeer, trackConnections } from "./connection.js";
import { handleCbs } from "./cbs.js";
import { handleManagement } from "./management-link.js";
import { checkSendLink, handleSend, openReader, pump } from "./partitions.js";
import { defaultConsumerGroup, eventHubsTiers, maxMessageSizeByTier, type EventHubsTier } from "./tiers.js";

/** Message format of an Event Hubs batch: the body is a list of data sections, each one encoded message. */
export const batchMessageFormat = 0x80013700;
export const defaultMaxMessageSizeBytes = 1024 * 1024;
export { defaultConsumerGroup, eventHubsTiers, maxMessageSizeByTier, type EventHubsTier };
export const defaultSharedAccessKeyName = "RootManageSharedAccessKey";
/** The well-known key of the local emulator connection string (like Microsoft's emulator): not a secret. */
export const defaultSharedAccessKey = "SAS_KEY_VALUE";

export interface EventHubsEmulatorOptions {
  /** TCP port; 0 (default) picks a free one. */
  port?: number;
  /** Interface to listen on (default 127.0.0.1). */
  host?: string;
  /** Serve AMQPS with a self-signed certificate (default false: plain AMQP, as for `UseDevelopmentEmulator=true`). */
  tls?: boolean;
  /** Where to write the certificate PEM when `tls` (default: a new temp file). */
  caCertPath?: string;
  hubName: string;
  /** Default 2. */
  partitionCount?: number;
  /** Consumer groups that exist (default `$Default` only); receivers on any other get `amqp:not-found`, as in Azure. */
  consumerGroups?: readonly string[];
  /** Namespace tier: sets the message/batch size limit as Azure does (Basic 256 KiB; Standard, Premium, Dedicated 1 MiB). */
  tier?: EventHubsTier;
  /** Advertised and enforced `max_message_size` of the links, in bytes (default: the tier's, 1 MiB for Standard). */
  maxMessageSize?: number;
  /** SAS key name and key of the returned connection string; SAS signatures are verified with this key. */
  sharedAccessKeyName?: string;
  sharedAccessKey?: string;
  logger?: Logger;
}

/** One stored event, decoded for inspection. */
export interface EmulatedEvent {
  readonly partitionId: string;
  readonly sequenceNumber: number;
  readonly offset: string;
  readonly enqueuedTimeUtc: Date;
  readonly partitionKey: string | undefined;
  readonly messageId: string | undefined;
  readonly contentType: string | undefined;
  readonly body: Buffer | undefined;
  readonly properties: Record<string, unknown>;
}

export interface EventHubsFaults {
  /** The next `count` sends suffer `fault` (default `server-busy`). */
  failNextSends(count: number, fault?: SendFault): void;
  /** Plans the next sends one by one: `["ok", "server-busy"]` lets one through, then fails the next. */
  planSends(plan: ReadonlyArray<SendFault | "ok">): void;
  /** While on, every send is rejected with `com.microsoft:server-busy`. */
  setServerBusy(on: boolean): void;
  /** Delays every accept disposition by `ms`. */
  setAcceptDelayMs(ms: number): void;
  /** Force-detaches every open hub/partition link now (`amqp:link:detach-forced`). */
  detachLinks(): void;
  /** Destroys every client connection now (no AMQP close: a network drop). */
  dropConnections(): void;
  /** Forgets planned faults, server-busy and the accept delay. */
  clear(): void;
  readonly pendingSendFaults: number;
}

export interface EventHubsEmulator {
  readonly host: string;
  readonly port: number;
  /** `amqp://host:port` or `amqps://host:port`. */
  readonly url: string;
  readonly hubName: string;
  readonly maxMessageSize: number;
  /** SAS connection string with EntityPath (and `UseDevelopmentEmulator=true` unless `tls`). */
  readonly connectionString: string;
  /** PEM file of the self-signed certificate (`tls` only): give it to clients as NODE_EXTRA_CA_CERTS. */
  readonly caCertPath: string | undefined;
  /** What was stored: one partition, or all partitions in partition order. */
  events(partitionId?: string): EmulatedEvent[];
  /** Raises the hub's partition count, as a Premium or Dedicated namespace allows (never lowers it). */
  scalePartitions(partitionCount: number): void;
  /**
   * Counters: send attempts received (every transfer that reached a hub or partition link, whatever became of it), sends
   * accepted/rejected, AMQP connections opened; client (TCP) connections open now and at most at once since start (a
   * namespace's connection quota counts these).
   */
  readonly stats: Readonly<PeerStats>;
  /** Every send received (the latest 10,000), in arrival order: when it came (wall clock, ms) and what became of it. */
  sendLog(): readonly SendLogEntry[];
  readonly faults: EventHubsFaults;
  close(): Promise<void>;
}

function decodeStored(event: StoredEvent): EmulatedEvent {
  const message = rhea.message.decode(event.encoded);
  const body = (message.body as { content?: unknown } | undefined)?.content;
  return {
    partitionId: event.partitionId,
    sequenceNumber: event.sequenceNumber,
    offset: event.offset,
    enqueuedTimeUtc: new Date(event.enqueuedTimeMs),
    partitionKey: event.partitionKey,
    messageId: message.message_id === undefined ? undefined : String(message.message_id),
    contentType: message.content_type,
    body: Buffer.isBuffer(body) ? body : undefined,
    properties: { ...(message.application_properties ?? {}) },
  };
}

/** The peer's state before it listens: its hub, store, fault plan, counters and connection books. */
function newPeer(options: EventHubsEmulatorOptions): Peer {
  return {
    hubName: options.hubName,
    sharedAccessKey: options.sharedAccessKey ?? defaultSharedAccessKey,
    maxMessageSize:
      options.maxMessageSize ?? (options.tier ? maxMessageSizeByTier[options.tier] : defaultMaxMessageSizeBytes),
    consumerGroups: new Set((options.consumerGroups ?? [defaultConsumerGroup]).map((name) => name.toLowerCase())),
    createdAt: new Date(),
    logger: options.logger ?? silentLogger(),
    store: new HubStore(options.partitionCount ?? 2),
    plan: new FaultPlan(),
    stats: {
      sendsReceived: 0,
      sendsAccepted: 0,
      sendsRejected: 0,
      connectionsOpened: 0,
      connectionsCurrent: 0,
      connectionsPeak: 0,
    },
    sendLog: [],
    connections: new Map(),
    sockets: new Set(),
    streams: new Map(),
    timers: new Set(),
    settleApart: new SettleApart(),
  };
}

/** The AMQP container's handlers: links opened and closed, flow, messages; returns the store's unsubscribe. */
function wireContainer(peer: Peer, container: Container): () => void {
  trackConnections(peer, container);
  const unsubscribe = peer.store.onAppend((partitionId) => {
    for (const stream of peer.streams.values()) if (stream.partitionId === partitionId) pump(peer, stream);
  });
  container.on("receiver_open", (context: EventContext) => checkSendLink(peer, context));
  container.on("sender_open", (context: EventContext) => openReader(peer, context));
  container.on("sendable", (context: EventContext) => {
    const stream = context.sender ? peer.streams.get(context.sender) : undefined;
    if (stream) pump(peer, stream);
  });
  container.on("sender_close", (context: EventContext) => {
    if (context.sender) peer.streams.delete(context.sender);
  });
  container.on("message", (context: EventContext) => routeMessage(peer, context));
  return unsubscribe;
}

/** Starts the peer; resolves once it listens. */
export async function startEventHubsEmulator(options: EventHubsEmulatorOptions): Promise<EventHubsEmulator> {
  const host = options.host ?? "127.0.0.1";
  const keyName = options.sharedAccessKeyName ?? defaultSharedAccessKeyName;
  const peer = newPeer(options);
  const tlsIdentity = options.tls ? await createLocalTlsIdentity(options.caCertPath, host) : undefined;

  installFullLengthPerformatives();
  const container = createContainer(peer.hubName);
  const unsubscribe = wireContainer(peer, container);

  const server = await listenPeer(peer, container, { port: options.port ?? 0, host, tls: tlsIdentity });
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  const endpointHost = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host;
  const connectionString =
    `Endpoint=sb://${endpointHost}:${port};SharedAccessKeyName=${keyName};SharedAccessKey=${peer.sharedAccessKey};EntityPath=${peer.hubName}` +
    (tlsIdentity ? "" : ";UseDevelopmentEmulator=true");

  let closed = false;
  return {
    host: endpointHost,
    port,
    url: `${tlsIdentity ? "amqps" : "amqp"}://${endpointHost}:${port}`,
    hubName: peer.hubName,
    maxMessageSize: peer.maxMessageSize,
    connectionString,
    caCertPath: tlsIdentity?.caCertPath,
    events: (partitionId) =>
      (partitionId === undefined ? peer.store.allEvents() : [...peer.store.events(partitionId)]).map(decodeStored),
    scalePartitions: (partitionCount) => peer.store.scalePartitions(partitionCount),
    stats: peer.stats,
    sendLog: () => peer.sendLog.map((entry) => ({ ...entry })),
    faults: faultsOf(peer),
    close: async () => {
      if (closed) return;
      closed = true;
      unsubscribe();
      for (const timer of peer.timers) clearTimeout(timer);
      peer.timers.clear();
      const done = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of peer.sockets) socket.destroy(connectionDropped());
      await done;
    },
  };
}

/** A message on a link we receive on: a `$cbs` or `$management` request, or a send to the hub or a partition. */
function routeMessage(peer: Peer, context: EventContext): void {
  const receiver = context.receiver;
  if (!receiver) return;
  const address = String(receiver.target?.address ?? "");
  const node = nodeOf(peer, address);
  if (node.kind === "cbs") return handleCbs(peer, context, context.message as Message);
  if (node.kind === "management") return handleManagement(peer, context, context.message as Message);
  if (node.kind !== "hub") {
    rejectDelivery(peer, context.delivery as Delivery, "amqp:not-found", `unknown entity '${address}'`);
    return;
  }
  handleSend(peer, context, node.partitionId);
}

function faultsOf(peer: Peer): EventHubsFaults {
  return {
    failNextSends: (count, fault) => peer.plan.failNextSends(count, fault),
    planSends: (sends) => peer.plan.planSends(sends),
    setServerBusy: (on) => peer.plan.setServerBusy(on),
    setAcceptDelayMs: (ms) => peer.plan.setAcceptDelayMs(ms),
    detachLinks: () => detachLinks(peer),
    dropConnections: () => dropConnections(peer),
    clear: () => peer.plan.clear(),
    get pendingSendFaults() {
      return peer.plan.pendingSendFaults;
    },
  };
}
