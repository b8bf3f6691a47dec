// The contract between the drainer and a sink: a sink sends one batch of outbox entries and says, per record, what
// became of it; it keeps no delivery state and never retries. The drainer (delivery/drainer.ts) owns the ledger, the
// one retry loop (backoff, server hints) and dead-letters.
import type { Logger } from "pino";
import type { SefRecord } from "@sef/contract/record.js";
import type { OutboxEntry } from "../delivery/outbox-entry.js";
import type { AgentMetrics } from "../observability/metrics.js";
import type { SinkRetrySettings } from "./delivery-settings.js";
import type { PluginEntry } from "../plugin-entry.js";

export type { PluginRulesInput } from "../plugin-entry.js";

/**
 * What became of one record of a send. Outcomes are values, not exceptions:
 * - `delivered`: the destination acknowledged it; it is never sent to this sink again;
 * - `retry`: send it again later; `afterMs` is the destination's hint (Retry-After), which the drainer honours
 *   (clamped by the retry policy) instead of its own backoff; `needsOperator` marks a failure that will not clear by
 *   itself soon (credentials, a missing destination): /readyz reports the sink at once;
 * - `rejected`: the destination will never accept it: dead-lettered with the reason, never retried; `tooLarge` marks
 *   a refusal for the request's size, which a sink that can split its request answers by sending it in parts.
 * Every sink's `classify` speaks these kinds (and nothing else), so one vocabulary runs from the destination's answer
 * to the ledger.
 */
export type RecordOutcome =
  | { readonly kind: "delivered" }
  | { readonly kind: "retry"; readonly reason: string; readonly afterMs?: number; readonly needsOperator?: boolean }
  | { readonly kind: "rejected"; readonly reason: string; readonly tooLarge?: boolean };

/** A record's outcome when the destination did not take it: what every sink's `classify` returns. */
export type FailedOutcome = Exclude<RecordOutcome, { kind: "delivered" }>;
/** An outcome to send the record again. */
export type RetryOutcome = Extract<RecordOutcome, { kind: "retry" }>;

/** One outcome per record of the batch, in batch order. */
export type SendOutcomes = readonly RecordOutcome[];

export const delivered: RecordOutcome = { kind: "delivered" };

export function retry(reason: string, afterMs?: number, needsOperator = false): RetryOutcome {
  return {
    kind: "retry",
    reason,
    ...(afterMs === undefined ? {} : { afterMs }),
    ...(needsOperator ? { needsOperator } : {}),
  };
}

export function rejected(reason: string, tooLarge = false): Extract<RecordOutcome, { kind: "rejected" }> {
  return { kind: "rejected", reason, ...(tooLarge ? { tooLarge } : {}) };
}

/** The same outcome for every record of the batch. */
export function allOutcomes(batch: readonly unknown[], outcome: RecordOutcome): RecordOutcome[] {
  return batch.map(() => outcome);
}

export interface Sink {
  /** Stable name, unique among the configured sinks; names the sink's rows in the delivery ledger and its metrics. */
  readonly name: string;
  /** Most records handed to one `send`. */
  readonly maxBatchRecords: number;
  /** How long to wait for more records before sending a non-urgent batch (0 = send at once). */
  readonly lingerMs: number;
  /**
   * Sends the drainer may have in flight at once while a backlog fills whole batches (default 1: the next send starts
   * after the previous one's outcomes are applied). Above 1 the next full batch is read and sent while earlier ones
   * are in flight: only for a destination where the order between batches does not matter.
   */
  readonly maxConcurrentSends?: number;
  /**
   * The sink's own retry policy (its section's `retry`), field by field over the agent's: the drainer of this sink
   * schedules its retries with it. Absent: the agent's policy.
   */
  readonly retryPolicy?: SinkRetrySettings | undefined;
  /**
   * Sends the batch (oldest first) and returns one outcome per record, in batch order. Must not throw for expected
   * failures: classify them instead (a throw counts as `retry` for the whole batch). Keeps no delivery state: a record
   * it is handed again is one the ledger still holds pending.
   */
  send(batch: readonly OutboxEntry[], signal: AbortSignal): Promise<SendOutcomes>;
  /** Releases connections; called once at shutdown after the last send. */
  close(): Promise<void>;
}

/** What a sink factory gets from the agent. */
export interface SinkContext {
  readonly logger: Logger;
  readonly dataDir: string;
  readonly agentVersion: string;
  /** The agent's metrics, for sink-specific counters (absent in tools that run a sink alone). */
  readonly metrics?: AgentMetrics;
}

/** A record is urgent when waiting for a fuller batch could cost the reader notice time. */
export function isUrgent(record: SefRecord): boolean {
  if (record.RecordType !== "Transition") return false;
  return record.EventStatus === "Started" || record.EventType === "Preempt" || record.EventType === "Terminate";
}

export interface SinkFactoryInput<Settings> {
  /** Text after the first ':' of the SPEC (`jsonl:/var/log/sef.jsonl` → `/var/log/sef.jsonl`). */
  readonly argument: string | undefined;
  /** This sink's validated settings: the config file's section named after the type (e.g. `eventhubs`). */
  readonly settings: Settings;
  readonly context: SinkContext;
}

/** A sink's registry entry: the plug-in shape every sink and action shares, and how a sink is named and made. */
export interface SinkFactory<Settings = unknown> extends PluginEntry<Settings> {
  /** One line for `sef run --help`. */
  readonly summary: string;
  /** Whether the SPEC must carry an argument (`jsonl:PATH`). */
  readonly argument: "required" | "none" | "optional";
  create(input: SinkFactoryInput<Settings>): Sink | Promise<Sink>;
}
