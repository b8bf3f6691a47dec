// The local Event Hubs peer: an AMQP 1.0 server (rhea) that the unmodified @azure/event-hubs clients talk to —
// SASL, $cbs put-token, $management READ, sender links (batched messages), receiver links with selector filters.
import type { Server, Socket } from "node:net";
import rhea from "rhea";
import type { Connection, Delivery, EventContext, Message, Receiver, Sender } from "rhea";
import type { Logger } from "pino";
import { silentLogger } from "../../support/logger.js";
import { HubStore, type StoredEvent } from "./store.js";
import { parseSelector, startIndex, type StartPosition } from "./selector.js";
import { checkPutToken, pathCovers } from "./cbs-auth.js";
import { answerManagementRequest } from "./management.js";
import { FaultPlan, type SendFault } from "./faults.js";
import { createLocalTlsIdentity } from "./tls.js";
import { parseNodeAddress, type NodeAddress } from "./addresses.js";
import { installFullLengthPerformatives } from "./full-performatives.js";
import { SettleApart, accepted, rejectedKey } from "./settle-apart.js";

/** Message format of an Event Hubs batch: the body is a list of data sections, each one encoded message. */
export const batchMessageFormat = 0x80013700;
export const defaultMaxMessageSizeBytes = 1024 * 1024;
export const defaultConsumerGroup = "$Default";
export const eventHubsTiers = ["basic", "standard", "premium", "dedicated"] as const;
export type EventHubsTier = (typeof eventHubsTiers)[number];
/** Largest event or batch each tier accepts, in bytes (Azure Event Hubs quotas). */
export const maxMessageSizeByTier: Readonly<Record<EventHubsTier, number>> = {
  basic: 256 * 1024,
  standard: 1024 * 1024,
  premium: 1024 * 1024,
  dedicated: 1024 * 1024,
};
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
  readonly stats: { sendsReceived: number; sendsAccepted: number; sendsRejected: number; connectionsOpened: number; connectionsCurrent: number; connectionsPeak: number };
  readonly faults: EventHubsFaults;
  close(): Promise<void>;
}

interface ConnectionState {
  /** Entity paths (lower case) this connection holds a valid token for. */
  readonly grantedPaths: Set<string>;
}

interface ReceiverStream {
  readonly sender: Sender;
  readonly partitionId: string;
  readonly consumerGroup: string;
  /** The receiver's owner level (`com.microsoft:epoch`), if it asked for exclusive ownership. */
  readonly epoch: number | undefined;
  nextIndex: number;
}

/** The owner level a receiver attached with (the service's `com.microsoft:epoch` link property). */
function epochOf(sender: Sender): number | undefined {
  const properties = (sender as unknown as { remote?: { attach?: { properties?: Record<string, unknown> } } }).remote?.attach?.properties;
  const value = properties?.["com.microsoft:epoch"];
  const n = typeof value === "object" && value !== null && "value" in value ? Number((value as { value: unknown }).value) : Number(value);
  return value === undefined || value === null || Number.isNaN(n) ? undefined : n;
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

/** Splits a transfer into the encoded messages it carries (a batch, or one plain message). */
function splitTransfer(payload: Buffer): { partitionKey: string | undefined; encoded: Buffer[] } {
  const envelope = rhea.message.decode(payload);
  const key = envelope.message_annotations?.["x-opt-partition-key"];
  const partitionKey = typeof key === "string" ? key : undefined;
  const body = envelope.body as { multiple?: boolean; content?: unknown } | undefined;
  const content = body?.content;
  if (Array.isArray(content) && content.every((c) => Buffer.isBuffer(c))) return { partitionKey, encoded: content as Buffer[] };
  if (Buffer.isBuffer(content)) return { partitionKey, encoded: [content] };
  return { partitionKey, encoded: [] };
}

/** Starts the peer; resolves once it listens. */
export async function startEventHubsEmulator(options: EventHubsEmulatorOptions): Promise<EventHubsEmulator> {
  const logger = options.logger ?? silentLogger();
  const hubName = options.hubName;
  const host = options.host ?? "127.0.0.1";
  const maxMessageSize = options.maxMessageSize ?? (options.tier ? maxMessageSizeByTier[options.tier] : defaultMaxMessageSizeBytes);
  const keyName = options.sharedAccessKeyName ?? defaultSharedAccessKeyName;
  const key = options.sharedAccessKey ?? defaultSharedAccessKey;
  const store = new HubStore(options.partitionCount ?? 2);
  const consumerGroups = new Set((options.consumerGroups ?? [defaultConsumerGroup]).map((name) => name.toLowerCase()));
  const createdAt = new Date();
  const plan = new FaultPlan();
  const stats = { sendsReceived: 0, sendsAccepted: 0, sendsRejected: 0, connectionsOpened: 0, connectionsCurrent: 0, connectionsPeak: 0 };
  const connections = new Map<Connection, ConnectionState>();
  const sockets = new Set<Socket>();
  const streams = new Map<Sender, ReceiverStream>();
  const timers = new Set<NodeJS.Timeout>();
  const tlsIdentity = options.tls ? await createLocalTlsIdentity(options.caCertPath, host) : undefined;

  installFullLengthPerformatives();
  const container = rhea.create_container({ id: `sef-eventhubs-${hubName}` });
  container.sasl_server_mechanisms.enable_anonymous();
  container.sasl_server_mechanisms.enable_plain(() => true);
  rhea.sasl.server_add_external(container.sasl_server_mechanisms);
  container.sasl_server_mechanisms["MSSBCBS"] = container.sasl_server_mechanisms["EXTERNAL"];

  const stateOf = (connection: Connection): ConnectionState => {
    let state = connections.get(connection);
    if (!state) {
      state = { grantedPaths: new Set() };
      connections.set(connection, state);
    }
    return state;
  };

  const isAuthorized = (connection: Connection, entityPath: string): boolean => {
    for (const granted of stateOf(connection).grantedPaths) if (pathCovers(granted, entityPath)) return true;
    return false;
  };

  const nodeOf = (address: unknown): NodeAddress => parseNodeAddress(String(address ?? ""), hubName);
  const knowsConsumerGroup = (name: string): boolean => consumerGroups.has(name.toLowerCase());

  /**
   * Answers a `$cbs`/`$management` request like the service: on the link named by reply-to when there is one, else on
   * the client's receiver link attached to the same node (Microsoft's Python clients send no reply-to).
   */
  const reply = (context: EventContext, request: Message, response: Message): void => {
    const to = request.reply_to;
    const node = nodeOf(context.receiver?.target?.address).kind;
    const connection = context.connection;
    const sameNode = (s: Sender): boolean => nodeOf(s.source?.address).kind === node && s.is_open();
    const sender =
      (to !== undefined ? connection.find_sender((s: Sender) => s.name === to || s.source?.address === to || s.target?.address === to) : undefined) ??
      connection.find_sender((s: Sender) => sameNode(s) && s.session === context.session) ??
      connection.find_sender(sameNode);
    if (!sender) {
      logger.warn({ replyTo: to, node }, "no reply link for request");
      acceptRequest(context, () => {});
      return;
    }
    // The service types status-code as an AMQP int; uamqp refuses any other integer type.
    const properties = { ...response.application_properties };
    if (typeof properties["status-code"] === "number") properties["status-code"] = rhea.types.wrap_int(properties["status-code"]);
    const answer = { ...response, application_properties: properties, ...(to !== undefined ? { to } : {}), correlation_id: request.message_id };
    // The answer goes after the request's accept disposition has gone out (rhea writes a turn's transfers before its
    // dispositions): uamqp drops a response that arrives before the disposition of its request.
    acceptRequest(context, () =>
      setImmediate(() => {
        if (sender.is_open() && !context.connection.is_closed()) sender.send(answer);
      }),
    );
  };

  const handleCbs = (context: EventContext, message: Message): void => {
    const properties = textProperties(message.application_properties);
    if (properties["operation"] !== "put-token") {
      reply(context, message, { body: undefined, application_properties: { "status-code": 400, "status-description": "unsupported $cbs operation" } });
      return;
    }
    const check = checkPutToken({ name: properties["name"], type: properties["type"], token: message.body }, { hubName, sharedAccessKey: key, nowMs: Date.now() });
    if (check.ok) {
      stateOf(context.connection).grantedPaths.add(check.entityPath);
      reply(context, message, { body: undefined, application_properties: { "status-code": 202, "status-description": "Accepted" } });
    } else {
      logger.info({ reason: check.reason, type: properties["type"], name: properties["name"] }, "put-token refused");
      reply(context, message, {
        body: undefined,
        application_properties: { "status-code": 401, "status-description": `Unauthorized: ${check.reason}`, "error-condition": "amqp:unauthorized-access" },
      });
    }
  };

  /** `$management` needs a token for any entity of this hub (the SDK puts one for `hub/$management`). */
  const holdsHubToken = (connection: Connection): boolean => {
    for (const granted of stateOf(connection).grantedPaths) if (pathCovers(hubName.toLowerCase(), granted)) return true;
    return false;
  };

  const handleManagement = (context: EventContext, message: Message): void => {
    const answer = holdsHubToken(context.connection)
      ? answerManagementRequest(textProperties(message.application_properties), { hubName, createdAt, store })
      : { statusCode: 401, statusDescription: "Unauthorized: no valid token for this hub", errorCondition: "amqp:unauthorized-access", body: undefined };
    const properties: Record<string, unknown> = { "status-code": answer.statusCode, "status-description": answer.statusDescription };
    if (answer.errorCondition) properties["error-condition"] = answer.errorCondition;
    reply(context, message, { application_properties: properties, body: answer.body });
  };

  const destroyConnection = (connection: Connection): void => {
    const socket = (connection as unknown as { socket?: { destroy(error?: Error): void } }).socket;
    socket?.destroy(connectionDropped());
  };

  // Every delivery the peer receives is settled through here, so that rhea never merges two outcomes into one range.
  const settleApart = new SettleApart();
  const rejectDelivery = (delivery: Delivery, condition: string, description: string): void =>
    settleApart.settle(delivery, { outcomeKey: rejectedKey(condition, description), apply: () => delivery.reject({ condition, description }) });
  /** Accepts a $cbs or $management request, then (once accepted) `afterwards`. */
  const acceptRequest = (context: EventContext, afterwards: () => void): void => {
    const delivery = context.delivery;
    if (!delivery) return afterwards();
    settleApart.settle(delivery, {
      outcomeKey: accepted,
      apply: () => {
        delivery.accept();
        afterwards();
      },
    });
  };

  const settleLater = (action: () => void): void => {
    const delayMs = plan.acceptDelayMs;
    if (delayMs <= 0) {
      action();
      return;
    }
    const timer = setTimeout(() => {
      timers.delete(timer);
      action();
    }, delayMs);
    timers.add(timer);
  };

  const handleSend = (context: EventContext, partitionId: string | undefined): void => {
    stats.sendsReceived++;
    const delivery = context.delivery as Delivery;
    const payload = context.message as unknown;
    const reject = (condition: string, description: string): void => {
      stats.sendsRejected++;
      rejectDelivery(delivery, condition, description);
    };
    const tooLarge = (sizeBytes: number): boolean => {
      if (sizeBytes <= maxMessageSize) return false;
      reject("amqp:link:message-size-exceeded", `The received message (size:${sizeBytes} bytes) exceeds the limit (${maxMessageSize} bytes) currently allowed on the link.`);
      return true;
    };
    if (!Buffer.isBuffer(payload)) {
      // A plain (format 0) message: rhea decoded it already; store its re-encoding.
      const single = rhea.message.encode(payload as Message);
      if (tooLarge(single.length)) return;
      return storeAndAccept(context, delivery, partitionId, { partitionKey: messagePartitionKey(payload as Message), encoded: [single] }, single.length);
    }
    if (tooLarge(payload.length)) return;
    let split: { partitionKey: string | undefined; encoded: Buffer[] };
    try {
      split = splitTransfer(payload);
    } catch (err) {
      reject("amqp:decode-error", `cannot decode the message: ${(err as Error).message}`);
      return;
    }
    storeAndAccept(context, delivery, partitionId, split, payload.length);
  };

  const storeAndAccept = (
    context: EventContext,
    delivery: Delivery,
    partitionId: string | undefined,
    split: { partitionKey: string | undefined; encoded: Buffer[] },
    sizeBytes: number,
  ): void => {
    const fault = plan.takeSendFault();
    const target = partitionId ?? store.assignPartition(split.partitionKey);
    switch (fault) {
      case "server-busy":
        stats.sendsRejected++;
        rejectDelivery(delivery, "com.microsoft:server-busy", "The request was terminated because the entity is being throttled (injected fault).");
        return;
      case "quota-exceeded":
        stats.sendsRejected++;
        rejectDelivery(delivery, "amqp:resource-limit-exceeded", "Quota exceeded (injected fault).");
        return;
      case "detach":
        context.receiver?.close({ condition: "amqp:link:detach-forced", description: "The link was force-detached (injected fault)." });
        return;
      case "drop-connection":
        destroyConnection(context.connection);
        return;
      case "store-then-drop":
        store.append(target, split.partitionKey, split.encoded);
        destroyConnection(context.connection);
        return;
      case undefined:
        break;
    }
    settleLater(() =>
      settleApart.settle(delivery, {
        outcomeKey: accepted,
        apply: () => {
          if (context.connection.is_closed() || !context.receiver?.is_open()) return;
          store.append(target, split.partitionKey, split.encoded);
          stats.sendsAccepted++;
          delivery.accept();
          logger.debug({ partitionId: target, events: split.encoded.length, sizeBytes }, "stored");
        },
      }),
    );
  };

  const toDelivery = (event: StoredEvent): Message => {
    const message = rhea.message.decode(event.encoded) as unknown as Message;
    message.message_annotations = {
      ...(message.message_annotations ?? {}),
      "x-opt-sequence-number": rhea.types.wrap_long(event.sequenceNumber),
      "x-opt-offset": event.offset,
      "x-opt-enqueued-time": new Date(event.enqueuedTimeMs),
      ...(event.partitionKey !== undefined ? { "x-opt-partition-key": event.partitionKey } : {}),
    };
    return message;
  };

  const pump = (stream: ReceiverStream): void => {
    const events = store.events(stream.partitionId);
    while (stream.nextIndex < events.length && stream.sender.sendable()) {
      stream.sender.send(toDelivery(events[stream.nextIndex]!));
      stream.nextIndex++;
    }
  };

  const unsubscribe = store.onAppend((partitionId) => {
    for (const stream of streams.values()) if (stream.partitionId === partitionId) pump(stream);
  });

  container.on("connection_open", (context: EventContext) => {
    stats.connectionsOpened++;
    stateOf(context.connection);
  });
  const forget = (context: EventContext): void => {
    connections.delete(context.connection);
    for (const [sender, stream] of streams) if (stream.sender.connection === context.connection) streams.delete(sender);
  };
  container.on("connection_close", forget);
  container.on("disconnected", forget);
  container.on("connection_error", () => undefined);
  container.on("protocol_error", (error: unknown) => {
    // azure-eventhub 5.11's pure-Python client ends a $management session before detaching its links; rhea then
    // closes that connection, which the client is closing anyway. Not worth a warning.
    const afterEnd = /received on invalid channel/.test(String((error as Error | undefined)?.message));
    logger[afterEnd ? "debug" : "warn"]({ err: error }, "AMQP protocol error");
  });
  container.on("error", (err: unknown) => logger.debug({ err }, "AMQP error"));

  // A client sender attached: we receive on it.
  container.on("receiver_open", (context: EventContext) => {
    const receiver = context.receiver as Receiver;
    receiver.set_source(receiver.source);
    receiver.set_target(receiver.target);
    const address = String(receiver.target?.address ?? "");
    const node = nodeOf(address);
    if (node.kind === "cbs" || node.kind === "management") return;
    if (node.kind !== "hub") {
      receiver.close({ condition: "amqp:not-found", description: `The messaging entity '${address}' could not be found.` });
      return;
    }
    if (node.partitionId !== undefined && !store.hasPartition(node.partitionId)) {
      receiver.close({ condition: "com.microsoft:argument-out-of-range", description: `The specified partition '${node.partitionId}' is invalid.` });
      return;
    }
    if (!isAuthorized(context.connection, node.entityPath)) {
      receiver.close({ condition: "amqp:unauthorized-access", description: `Unauthorized access to '${address}': put a valid token first.` });
    }
  });

  // A client receiver attached: we send on it (either a $cbs/$management reply link or a partition reader).
  container.on("sender_open", (context: EventContext) => {
    const sender = context.sender as Sender;
    sender.set_source(sender.source);
    sender.set_target(sender.target);
    const address = String(sender.source?.address ?? "");
    const node = nodeOf(address);
    if (node.kind === "cbs" || node.kind === "management") return;
    if (node.kind !== "consumer" || !knowsConsumerGroup(node.consumerGroup)) {
      sender.close({ condition: "amqp:not-found", description: `The messaging entity '${address}' could not be found.` });
      return;
    }
    if (!store.hasPartition(node.partitionId)) {
      sender.close({ condition: "com.microsoft:argument-out-of-range", description: `The specified partition '${node.partitionId}' is invalid.` });
      return;
    }
    if (!isAuthorized(context.connection, node.entityPath)) {
      sender.close({ condition: "amqp:unauthorized-access", description: `Unauthorized access to '${address}': put a valid token first.` });
      return;
    }
    const filter = (sender.source as { filter?: Record<string, { value?: unknown } | string> } | undefined)?.filter;
    const selector = filter?.["apache.org:selector-filter:string"];
    const selectorText = typeof selector === "string" ? selector : typeof selector?.value === "string" ? selector.value : undefined;
    let position: StartPosition;
    try {
      position = parseSelector(selectorText);
    } catch (err) {
      sender.close({ condition: "amqp:invalid-field", description: (err as Error).message });
      return;
    }
    // Owner level, as the service enforces it: a receiver with an epoch takes the partition (in this consumer group)
    // from receivers with a lower or equal one and from those without; a receiver without one cannot join an owner.
    const epoch = epochOf(sender);
    const rivals = [...streams.values()].filter((s) => s.partitionId === node.partitionId && s.consumerGroup === node.consumerGroup);
    if (epoch === undefined && rivals.some((s) => s.epoch !== undefined)) {
      sender.close({ condition: "amqp:link:stolen", description: `A receiver with an epoch already owns partition '${node.partitionId}' of consumer group '${node.consumerGroup}'.` });
      return;
    }
    if (epoch !== undefined) {
      for (const rival of rivals) {
        if (rival.epoch !== undefined && rival.epoch > epoch) {
          sender.close({ condition: "amqp:link:stolen", description: `A receiver with a higher epoch '${rival.epoch}' already exists; this one ('${epoch}') cannot be created.` });
          return;
        }
      }
      for (const rival of rivals) {
        streams.delete(rival.sender);
        rival.sender.close({
          condition: "amqp:link:stolen",
          description: `New receiver with higher epoch of '${epoch}' is created hence current receiver with epoch '${rival.epoch ?? "none"}' is getting disconnected.`,
        });
      }
    }
    const stream: ReceiverStream = { sender, partitionId: node.partitionId, consumerGroup: node.consumerGroup, epoch, nextIndex: startIndex(position, store.events(node.partitionId)) };
    streams.set(sender, stream);
    pump(stream);
  });

  container.on("sendable", (context: EventContext) => {
    const stream = context.sender ? streams.get(context.sender) : undefined;
    if (stream) pump(stream);
  });
  container.on("sender_close", (context: EventContext) => {
    if (context.sender) streams.delete(context.sender);
  });

  container.on("message", (context: EventContext) => {
    const receiver = context.receiver;
    if (!receiver) return;
    const address = String(receiver.target?.address ?? "");
    const node = nodeOf(address);
    if (node.kind === "cbs") return handleCbs(context, context.message as Message);
    if (node.kind === "management") return handleManagement(context, context.message as Message);
    if (node.kind !== "hub") {
      rejectDelivery(context.delivery as Delivery, "amqp:not-found", `unknown entity '${address}'`);
      return;
    }
    handleSend(context, node.partitionId);
  });

  const linkOptions = { max_message_size: maxMessageSize };
  const server: Server = container.listen({
    port: options.port ?? 0,
    host,
    transport: tlsIdentity ? "tls" : "tcp",
    ...(tlsIdentity ? { key: tlsIdentity.keyPem, cert: tlsIdentity.certPem } : {}),
    max_frame_size: 65536,
    channel_max: 4999,
    idle_time_out: 120_000,
    receiver_options: { ...linkOptions, autoaccept: false, credit_window: 1000 },
    sender_options: { ...linkOptions, autosettle: true },
  } as Parameters<typeof container.listen>[0]) as unknown as Server;
  server.on("connection", (socket: Socket) => {
    // Like the service, answer small frames (dispositions) at once: Nagle + delayed ACKs would stall a client ~40 ms.
    socket.setNoDelay(true);
    sockets.add(socket);
    stats.connectionsCurrent = sockets.size;
    stats.connectionsPeak = Math.max(stats.connectionsPeak, sockets.size);
    socket.on("close", () => {
      sockets.delete(socket);
      stats.connectionsCurrent = sockets.size;
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.once("listening", () => {
      server.off("error", reject);
      resolve();
    });
  });
  server.on("error", (err) => logger.warn({ err }, "listener error"));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  const scheme = tlsIdentity ? "amqps" : "amqp";
  const endpointHost = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host;
  const connectionString =
    `Endpoint=sb://${endpointHost}:${port};SharedAccessKeyName=${keyName};SharedAccessKey=${key};EntityPath=${hubName}` +
    (tlsIdentity ? "" : ";UseDevelopmentEmulator=true");

  const faults: EventHubsFaults = {
    failNextSends: (count, fault) => plan.failNextSends(count, fault),
    planSends: (sends) => plan.planSends(sends),
    setServerBusy: (on) => plan.setServerBusy(on),
    setAcceptDelayMs: (ms) => plan.setAcceptDelayMs(ms),
    detachLinks: () => {
      for (const connection of connections.keys()) {
        const links: Array<Sender | Receiver> = [];
        connection.each_link((link: Sender | Receiver) => {
          const linkAddress = String((link.is_receiver() ? link.target?.address : link.source?.address) ?? "");
          if (linkAddress !== "$cbs" && linkAddress !== "$management") links.push(link);
        });
        for (const link of links) link.close({ condition: "amqp:link:detach-forced", description: "The link was force-detached (injected fault)." });
      }
    },
    dropConnections: () => {
      for (const socket of sockets) socket.destroy(connectionDropped());
    },
    clear: () => plan.clear(),
    get pendingSendFaults() {
      return plan.pendingSendFaults;
    },
  };

  let closed = false;
  return {
    host: endpointHost,
    port,
    url: `${scheme}://${endpointHost}:${port}`,
    hubName,
    maxMessageSize,
    connectionString,
    caCertPath: tlsIdentity?.caCertPath,
    events: (partitionId) => (partitionId === undefined ? store.allEvents() : [...store.events(partitionId)]).map(decodeStored),
    scalePartitions: (partitionCount) => store.scalePartitions(partitionCount),
    stats,
    faults,
    close: async () => {
      if (closed) return;
      closed = true;
      unsubscribe();
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      const done = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy(connectionDropped());
      await done;
    },
  };
}

/**
 * The error to destroy a socket with. rhea handles a socket's `end` and `error` but not `close`: a plain destroy()
 * would leave the connection's idle-timeout timers (minutes) running and keep the process alive.
 */
function connectionDropped(): Error {
  return Object.assign(new Error("connection dropped by the local Event Hubs peer"), { code: "ECONNRESET" });
}

function messagePartitionKey(message: Message): string | undefined {
  const key = message.message_annotations?.["x-opt-partition-key"];
  return typeof key === "string" ? key : undefined;
}

/** Application properties with binary values read as UTF-8 text (newer clients send the put-token `type` and `name` as binary). */
function textProperties(properties: Record<string, unknown> | undefined): Record<string, unknown> {
  const text: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(properties ?? {})) text[name] = Buffer.isBuffer(value) ? value.toString("utf8") : value;
  return text;
}
