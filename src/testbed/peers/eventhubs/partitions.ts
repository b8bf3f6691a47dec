// The hub's partitions on the wire: sends on hub or partition links (size limit, injected faults, stored then
// accepted), and partition readers (selector start position, owner level by epoch, events pumped as credit allows).
import rhea from "rhea";
import type { Delivery, EventContext, Message, Receiver, Sender } from "rhea";
import type { StoredEvent } from "./store.js";
import { parseSelector, startIndex, type StartPosition } from "./selector.js";
import { accepted } from "./settle-apart.js";
import { isAuthorized } from "./cbs.js";
import type { NodeAddress } from "./addresses.js";
import {
  destroyConnection,
  nodeOf,
  rejectDelivery,
  sendLogLimit,
  type Peer,
  type ReceiverStream,
  type SendLogEntry,
} from "./peer.js";

/** One send received on a hub link (`partitionId` undefined) or a partition link. */
export function handleSend(peer: Peer, context: EventContext, partitionId: string | undefined): void {
  peer.stats.sendsReceived++;
  const logged: SendLogEntry = { atMs: Date.now(), partitionId, outcome: "pending" };
  peer.sendLog.push(logged);
  if (peer.sendLog.length > sendLogLimit) peer.sendLog.shift();
  const delivery = context.delivery as Delivery;
  const payload = context.message as unknown;
  const reject = (condition: string, description: string): void => {
    logged.outcome = `rejected:${condition}`;
    peer.stats.sendsRejected++;
    rejectDelivery(peer, delivery, condition, description);
  };
  const tooLarge = (sizeBytes: number): boolean => {
    if (sizeBytes <= peer.maxMessageSize) return false;
    reject(
      "amqp:link:message-size-exceeded",
      `The received message (size:${sizeBytes} bytes) exceeds the limit (${peer.maxMessageSize} bytes) currently allowed on the link.`,
    );
    return true;
  };
  if (!Buffer.isBuffer(payload)) {
    // A plain (format 0) message: rhea decoded it already; store its re-encoding.
    const single = rhea.message.encode(payload as Message);
    if (tooLarge(single.length)) return;
    return storeAndAccept(
      peer,
      context,
      delivery,
      logged,
      { partitionKey: messagePartitionKey(payload as Message), encoded: [single] },
      single.length,
    );
  }
  if (tooLarge(payload.length)) return;
  let split: { partitionKey: string | undefined; encoded: Buffer[] };
  try {
    split = splitTransfer(payload);
  } catch (err) {
    reject("amqp:decode-error", `cannot decode the message: ${(err as Error).message}`);
    return;
  }
  storeAndAccept(peer, context, delivery, logged, split, payload.length);
}

function storeAndAccept(
  peer: Peer,
  context: EventContext,
  delivery: Delivery,
  logged: SendLogEntry,
  split: { partitionKey: string | undefined; encoded: Buffer[] },
  sizeBytes: number,
): void {
  const { store, stats } = peer;
  const fault = peer.plan.takeSendFault();
  const target = logged.partitionId ?? store.assignPartition(split.partitionKey);
  switch (fault) {
    case "server-busy":
      logged.outcome = "rejected:com.microsoft:server-busy";
      stats.sendsRejected++;
      rejectDelivery(
        peer,
        delivery,
        "com.microsoft:server-busy",
        "The request was terminated because the entity is being throttled (injected fault).",
      );
      return;
    case "quota-exceeded":
      logged.outcome = "rejected:amqp:resource-limit-exceeded";
      stats.sendsRejected++;
      rejectDelivery(peer, delivery, "amqp:resource-limit-exceeded", "Quota exceeded (injected fault).");
      return;
    case "detach":
      logged.outcome = "detached";
      context.receiver?.close({
        condition: "amqp:link:detach-forced",
        description: "The link was force-detached (injected fault).",
      });
      return;
    case "drop-connection":
      logged.outcome = "dropped";
      destroyConnection(context.connection);
      return;
    case "store-then-drop":
      logged.outcome = "dropped";
      store.append(target, split.partitionKey, split.encoded);
      destroyConnection(context.connection);
      return;
    case undefined:
      break;
  }
  settleLater(peer, () =>
    peer.settleApart.settle(delivery, {
      outcomeKey: accepted,
      apply: () => {
        if (context.connection.is_closed() || !context.receiver?.is_open()) return;
        store.append(target, split.partitionKey, split.encoded);
        stats.sendsAccepted++;
        logged.outcome = "accepted";
        delivery.accept();
        peer.logger.debug({ partitionId: target, events: split.encoded.length, sizeBytes }, "stored");
      },
    }),
  );
}

function settleLater(peer: Peer, action: () => void): void {
  const delayMs = peer.plan.acceptDelayMs;
  if (delayMs <= 0) {
    action();
    return;
  }
  const timer = setTimeout(() => {
    peer.timers.delete(timer);
    action();
  }, delayMs);
  peer.timers.add(timer);
}

/** Splits a transfer into the encoded messages it carries (a batch, or one plain message). */
function splitTransfer(payload: Buffer): { partitionKey: string | undefined; encoded: Buffer[] } {
  const envelope = rhea.message.decode(payload);
  const key = envelope.message_annotations?.["x-opt-partition-key"];
  const partitionKey = typeof key === "string" ? key : undefined;
  const body = envelope.body as { multiple?: boolean; content?: unknown } | undefined;
  const content = body?.content;
  if (Array.isArray(content) && content.every((c) => Buffer.isBuffer(c)))
    return { partitionKey, encoded: content as Buffer[] };
  if (Buffer.isBuffer(content)) return { partitionKey, encoded: [content] };
  return { partitionKey, encoded: [] };
}

function messagePartitionKey(message: Message): string | undefined {
  const key = message.message_annotations?.["x-opt-partition-key"];
  return typeof key === "string" ? key : undefined;
}

function toDelivery(event: StoredEvent): Message {
  const message = rhea.message.decode(event.encoded) as unknown as Message;
  message.message_annotations = {
    ...(message.message_annotations ?? {}),
    "x-opt-sequence-number": rhea.types.wrap_long(event.sequenceNumber),
    "x-opt-offset": event.offset,
    "x-opt-enqueued-time": new Date(event.enqueuedTimeMs),
    ...(event.partitionKey !== undefined ? { "x-opt-partition-key": event.partitionKey } : {}),
  };
  return message;
}

/** Sends a reader the partition's events it has not had, as far as its credit goes. */
export function pump(peer: Peer, stream: ReceiverStream): void {
  const events = peer.store.events(stream.partitionId);
  while (stream.nextIndex < events.length && stream.sender.sendable()) {
    stream.sender.send(toDelivery(events[stream.nextIndex]!));
    stream.nextIndex++;
  }
}

/** A client sender attached (we receive on it): only this hub, an existing partition, and with a token. */
export function checkSendLink(peer: Peer, context: EventContext): void {
  const receiver = context.receiver as Receiver;
  const attached = attachedNode(peer, receiver, "target");
  if (!attached) return;
  const { address, node } = attached;
  const refusal = node.kind === "hub" ? accessRefusal(peer, context, address, node) : notFound(address);
  if (refusal) receiver.close(refusal);
}

/**
 * Echoes an attaching link's source and target and names the node its `terminus` addresses; undefined for `$cbs` and
 * `$management` links, which their own modules serve.
 */
function attachedNode(
  peer: Peer,
  link: Sender | Receiver,
  terminus: "source" | "target",
): { address: string; node: Exclude<NodeAddress, { kind: "cbs" | "management" }> } | undefined {
  link.set_source(link.source);
  link.set_target(link.target);
  const address = String(link[terminus]?.address ?? "");
  const node = nodeOf(peer, address);
  return node.kind === "cbs" || node.kind === "management" ? undefined : { address, node };
}

interface LinkRefusal {
  condition: string;
  description: string;
}

function notFound(address: string): LinkRefusal {
  return { condition: "amqp:not-found", description: `The messaging entity '${address}' could not be found.` };
}

/** Why the service refuses a link to an entity it has: a partition it has not, or no token put for it. */
function accessRefusal(
  peer: Peer,
  context: EventContext,
  address: string,
  node: { entityPath: string; partitionId: string | undefined },
): LinkRefusal | undefined {
  if (node.partitionId !== undefined && !peer.store.hasPartition(node.partitionId)) {
    return {
      condition: "com.microsoft:argument-out-of-range",
      description: `The specified partition '${node.partitionId}' is invalid.`,
    };
  }
  if (!isAuthorized(peer, context.connection, node.entityPath)) {
    return {
      condition: "amqp:unauthorized-access",
      description: `Unauthorized access to '${address}': put a valid token first.`,
    };
  }
  return undefined;
}

/** A client receiver attached (we send on it): a `$cbs`/`$management` reply link, or a partition reader. */
export function openReader(peer: Peer, context: EventContext): void {
  const sender = context.sender as Sender;
  const attached = attachedNode(peer, sender, "source");
  if (!attached) return;
  const { address, node } = attached;
  if (node.kind !== "consumer" || !peer.consumerGroups.has(node.consumerGroup.toLowerCase())) {
    sender.close(notFound(address));
    return;
  }
  const refusal = accessRefusal(peer, context, address, node);
  if (refusal) {
    sender.close(refusal);
    return;
  }
  const filter = (sender.source as { filter?: Record<string, { value?: unknown } | string> } | undefined)?.filter;
  const selector = filter?.["apache.org:selector-filter:string"];
  const selectorText =
    typeof selector === "string" ? selector : typeof selector?.value === "string" ? selector.value : undefined;
  let position: StartPosition;
  try {
    position = parseSelector(selectorText);
  } catch (err) {
    sender.close({ condition: "amqp:invalid-field", description: (err as Error).message });
    return;
  }
  const epoch = epochOf(sender);
  if (!takeOwnership(peer, sender, node.partitionId, node.consumerGroup, epoch)) return;
  const stream: ReceiverStream = {
    sender,
    partitionId: node.partitionId,
    consumerGroup: node.consumerGroup,
    epoch,
    nextIndex: startIndex(position, peer.store.events(node.partitionId)),
  };
  peer.streams.set(sender, stream);
  pump(peer, stream);
}

/**
 * Owner level, as the service enforces it: a receiver with an epoch takes the partition (in this consumer group) from
 * receivers with a lower or equal one and from those without; a receiver without one cannot join an owner. False (the
 * new reader closed) when it may not read.
 */
function takeOwnership(
  peer: Peer,
  sender: Sender,
  partitionId: string,
  consumerGroup: string,
  epoch: number | undefined,
): boolean {
  const rivals = [...peer.streams.values()].filter(
    (s) => s.partitionId === partitionId && s.consumerGroup === consumerGroup,
  );
  if (epoch === undefined && rivals.some((s) => s.epoch !== undefined)) {
    sender.close({
      condition: "amqp:link:stolen",
      description: `A receiver with an epoch already owns partition '${partitionId}' of consumer group '${consumerGroup}'.`,
    });
    return false;
  }
  if (epoch === undefined) return true;
  for (const rival of rivals) {
    if (rival.epoch !== undefined && rival.epoch > epoch) {
      sender.close({
        condition: "amqp:link:stolen",
        description: `A receiver with a higher epoch '${rival.epoch}' already exists; this one ('${epoch}') cannot be created.`,
      });
      return false;
    }
  }
  for (const rival of rivals) {
    peer.streams.delete(rival.sender);
    rival.sender.close({
      condition: "amqp:link:stolen",
      description: `New receiver with higher epoch of '${epoch}' is created hence current receiver with epoch '${rival.epoch ?? "none"}' is getting disconnected.`,
    });
  }
  return true;
}

/** The owner level a receiver attached with (the service's `com.microsoft:epoch` link property). */
function epochOf(sender: Sender): number | undefined {
  const properties = (sender as unknown as { remote?: { attach?: { properties?: Record<string, unknown> } } }).remote
    ?.attach?.properties;
  const value = properties?.["com.microsoft:epoch"];
  const n =
    typeof value === "object" && value !== null && "value" in value
      ? Number((value as { value: unknown }).value)
      : Number(value);
  return value === undefined || value === null || Number.isNaN(n) ? undefined : n;
}
