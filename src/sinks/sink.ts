// The contract between the drain loop and a sink: a sink sends one batch and classifies the outcome;
// the shared drain loop (sinks/drainer.ts) owns retries, backoff, dead-lettering and the cursor.
import type { Logger } from "pino";
import type { z } from "zod";
import type { SefRecord } from "../contract/record.js";
import type { AgentMetrics } from "../observability/metrics.js";
import type { OutboxEntry } from "../store/outbox-entry.js";

export type { OutboxEntry } from "../store/outbox-entry.js";

/** A record that the sink's destination will never accept, with the destination's reason. */
export interface RejectedRecord {
  readonly seq: number;
  readonly reason: string;
}

/**
 * What one send attempt came to. Results are values, not exceptions:
 * - `ok`: every record of the batch was accepted, except those in `rejected` (dead-lettered, never retried).
 * - `retryable`: try again later; the first `acceptedCount` records were accepted and will not be re-sent;
 *   `retryAfterMs` is the server's hint, which wins over our own backoff; `needsOperator` marks a failure that will not
 *   clear by itself soon (credentials, a missing destination): /readyz reports the sink at once.
 * - `permanent`: the whole batch can never be accepted (e.g. 401/403 is *not* this: see each sink's docs).
 */
export type SendResult =
  | { readonly kind: "ok"; readonly rejected?: readonly RejectedRecord[] }
  | { readonly kind: "retryable"; readonly reason: string; readonly retryAfterMs?: number; readonly acceptedCount?: number; readonly needsOperator?: boolean }
  | { readonly kind: "permanent"; readonly reason: string };

export interface Sink {
  /** Stable name, unique among the configured sinks; names the sink's cursor in the store and its metrics. */
  readonly name: string;
  /** Most records handed to one `send`. */
  readonly maxBatchRecords: number;
  /** How long to wait for more records before sending a non-urgent batch (0 = send at once). */
  readonly lingerMs: number;
  /** Sends the batch in order. Must not throw for expected failures: classify them instead. */
  send(batch: readonly OutboxEntry[], signal: AbortSignal): Promise<SendResult>;
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

export interface SinkFactory<Settings = unknown> {
  /** SPEC prefix, also the config section holding this sink's settings. */
  readonly type: string;
  /** One line for `sef run --help`. */
  readonly summary: string;
  /** Whether the SPEC must carry an argument (`jsonl:PATH`). */
  readonly argument: "required" | "none" | "optional";
  /** Validates the config section; defaults belong here. */
  readonly settingsSchema: z.ZodType<Settings>;
  create(input: SinkFactoryInput<Settings>): Sink | Promise<Sink>;
}
