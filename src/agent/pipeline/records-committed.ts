// The "records committed" signal: the commit stage announces each durable batch of outbox entries, and the stages
// that act on new records (drain, act, heartbeat) follow it, each subscribing itself when it is built.
import type { OutboxEntry } from "../sinks/sink.js";

export type CommittedFollower = (entries: readonly OutboxEntry[]) => void;

export class RecordsCommitted {
  private readonly followers: CommittedFollower[] = [];

  /** `follower` hears of every later durable batch (never empty), in the order the followers subscribed. */
  follow(follower: CommittedFollower): void {
    this.followers.push(follower);
  }

  announce(entries: readonly OutboxEntry[]): void {
    for (const follower of this.followers) follower(entries);
  }
}
