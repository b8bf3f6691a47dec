// Request/response over AMQP links, shared by `$cbs` and `$management`: accept the request, then answer on the link
// the client named (reply-to) or on its receiver attached to the same node.
import rhea from "rhea";
import type { EventContext, Message, Sender } from "rhea";
import { accepted } from "./settle-apart.js";
import { nodeOf, type Peer } from "./peer.js";

/** Accepts a $cbs or $management request, then (once accepted) `afterwards`. */
export function acceptRequest(peer: Peer, context: EventContext, afterwards: () => void): void {
  const delivery = context.delivery;
  if (!delivery) return afterwards();
  peer.settleApart.settle(delivery, {
    outcomeKey: accepted,
    apply: () => {
      delivery.accept();
      afterwards();
    },
  });
}

/**
 * Answers a `$cbs`/`$management` request like the service: on the link named by reply-to when there is one, else on
 * the client's receiver link attached to the same node (Microsoft's Python clients send no reply-to).
 */
export function reply(peer: Peer, context: EventContext, request: Message, response: Message): void {
  const to = request.reply_to;
  const node = nodeOf(peer, context.receiver?.target?.address).kind;
  const connection = context.connection;
  const sameNode = (s: Sender): boolean => nodeOf(peer, s.source?.address).kind === node && s.is_open();
  const sender =
    (to !== undefined
      ? connection.find_sender((s: Sender) => s.name === to || s.source?.address === to || s.target?.address === to)
      : undefined) ??
    connection.find_sender((s: Sender) => sameNode(s) && s.session === context.session) ??
    connection.find_sender(sameNode);
  if (!sender) {
    peer.logger.warn({ replyTo: to, node }, "no reply link for request");
    acceptRequest(peer, context, () => {});
    return;
  }
  // The service types status-code as an AMQP int; uamqp refuses any other integer type.
  const properties = { ...response.application_properties };
  if (typeof properties["status-code"] === "number")
    properties["status-code"] = rhea.types.wrap_int(properties["status-code"]);
  const answer = {
    ...response,
    application_properties: properties,
    ...(to !== undefined ? { to } : {}),
    correlation_id: request.message_id,
  };
  // The answer goes after the request's accept disposition has gone out (rhea writes a turn's transfers before its
  // dispositions): uamqp drops a response that arrives before the disposition of its request.
  acceptRequest(peer, context, () =>
    setImmediate(() => {
      if (sender.is_open() && !context.connection.is_closed()) sender.send(answer);
    }),
  );
}
