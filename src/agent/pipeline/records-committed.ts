// The "records committed" signal: the commit stage announces each durable batch of outbox entries, and the stages
// that act on new records (drain, act, heartbeat) follow it, each subscribing itself when it is built.
import type { OutboxEntry } from "../delivery/outbox-entry.js";
import { Signal } from "../util/signal.js";

export type CommittedFollower = (entries: readonly OutboxEntry[]) => void;

/** Each durable batch (never empty), to the followers in the order they subscribed. */
export class RecordsCommitted extends Signal<readonly OutboxEntry[]> {}
