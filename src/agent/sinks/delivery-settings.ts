// The one settings piece every sink's section embeds for how the drainer feeds it: records per send, linger, and an
// optional retry policy of its own (field by field over the agent's `retry`); the shared shapes of a sink's concurrency
// and time limits; the whole section of a sink that only writes lines. One set of bounds for all sinks; only the defaults
// differ per sink.
import * as z from "zod/mini";
import "../util/zod-locale.js";
import type { RetryPolicy } from "@sef/retry/policy.js";
import { documented } from "../util/setting-doc.js";

/** Most records one send may be given, for any sink. */
export const maxBatchRecordsLimit = 100_000;
/** Longest linger of any sink: an urgent record never waits, a non-urgent one at most a minute. */
export const maxLingerMs = 60_000;

/** What differs between sinks in the shared piece: the defaults, and how each reads in the reference. */
export interface DeliveryDefaults {
  readonly maxBatchRecords: number;
  readonly lingerMs: number;
  /** The reference line of `maxBatchRecords` (how the sink splits a batch). */
  readonly batchDescription: string;
}

const positiveInt = () => z.number().check(z.int(), z.minimum(1));

/** A sink's own retry policy: every field optional, an absent one taken from the agent's `retry`. */
export const sinkRetrySchema = z.strictObject({
  initialDelayMs: documented(z.optional(positiveInt()), {
    description: "First retry delay of this sink.",
    defaultText: "`retry.initialDelayMs`",
  }),
  maxDelayMs: documented(z.optional(positiveInt()), {
    description: "Longest retry delay of this sink (and longest honoured server hint).",
    defaultText: "`retry.maxDelayMs`",
  }),
  multiplier: documented(z.optional(z.number().check(z.minimum(1), z.maximum(10))), {
    description: "Growth of this sink's delay per retry.",
    defaultText: "`retry.multiplier`",
  }),
});
export type SinkRetrySettings = z.infer<typeof sinkRetrySchema>;

/** The shared piece's values, as a sink's validated section holds them. */
export interface DeliverySettings {
  readonly maxBatchRecords: number;
  readonly lingerMs: number;
  readonly retry?: SinkRetrySettings | undefined;
}

/** The fields every sink section embeds (spread into its `strictObject`). */
export function deliverySettings(defaults: DeliveryDefaults) {
  return {
    maxBatchRecords: documented(
      z._default(positiveInt().check(z.maximum(maxBatchRecordsLimit)), defaults.maxBatchRecords),
      { description: defaults.batchDescription, unit: "records" },
    ),
    lingerMs: documented(
      z._default(z.number().check(z.int(), z.minimum(0), z.maximum(maxLingerMs)), defaults.lingerMs),
      {
        description:
          "Wait for a fuller batch of non-urgent records (records of `Preempt`/`Terminate` events and any `Started` are never held back).",
      },
    ),
    retry: documented(z.optional(sinkRetrySchema), {
      description:
        "This sink's own retry policy, field by field over the agent's `retry` (e.g. `{\"maxDelayMs\": 10000}` for a destination that should be tried again sooner).",
      defaultText: "(the agent's `retry`)",
    }),
  };
}

/**
 * The whole section of a sink that writes lines to a stream or a file (stdout, jsonl): the shared piece alone, no
 * linger; only the records per write differ. The section may be absent or empty; any other key is an unknown setting.
 */
export function lineWriterSettingsSchema(maxBatchRecords: number) {
  return z.strictObject({
    ...deliverySettings({
      maxBatchRecords,
      lingerMs: 0,
      batchDescription: "Records per write (one `write` of their lines).",
    }),
  });
}

/** A sink's setting of how many operations it keeps in flight at once (1 = one at a time). */
export function concurrencySetting(options: { default: number; max: number; unit: string; description: string }) {
  return documented(z._default(positiveInt().check(z.maximum(options.max)), options.default), {
    description: options.description,
    unit: options.unit,
  });
}

/** A sink's time limit of one request or attempt, at least `min` ms (what its protocol needs to finish at all). */
export function timeoutSetting(options: { default: number; min: number; description: string }) {
  return documented(z._default(z.number().check(z.int(), z.minimum(options.min)), options.default), {
    description: options.description,
  });
}

/** The retry policy of one sink's drainer: its own fields over the agent's. */
export function sinkRetryPolicy(agentPolicy: RetryPolicy, own: SinkRetrySettings | undefined): RetryPolicy {
  return {
    initialDelayMs: own?.initialDelayMs ?? agentPolicy.initialDelayMs,
    maxDelayMs: own?.maxDelayMs ?? agentPolicy.maxDelayMs,
    multiplier: own?.multiplier ?? agentPolicy.multiplier,
  };
}
