// The shared delivery piece every sink's section embeds: one set of bounds, per-sink defaults, an optional retry
// policy of the sink's own that its drainer (and only its drainer) is given, field by field over the agent's.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { sinkFactories } from "../../src/agent/sinks/registry.js";
import { sinkRetryPolicy } from "../../src/agent/sinks/delivery-settings.js";
import { DrainStage } from "../../src/agent/pipeline/drain-stage.js";
import { RecordsCommitted } from "../../src/agent/pipeline/records-committed.js";
import { JsonlSink } from "../../src/agent/sinks/jsonl/sink.js";
import { StdoutSink } from "../../src/agent/sinks/stdout/sink.js";
import { DeadLetterFile } from "../../src/agent/delivery/dead-letter.js";
import { AgentMetrics } from "../../src/agent/observability/metrics.js";
import { silentLogger } from "../../src/agent/observability/logger.js";
import { openOutbox } from "../helpers/outbox.js";
import { instantClock } from "../helpers/fake-clock.js";

const agentPolicy = { initialDelayMs: 500, maxDelayMs: 60_000, multiplier: 2 };

/** A section that parses for every sink (the ones with required fields get them). */
const required: Record<string, object> = {
  loganalytics: { endpoint: "https://dce.example", ruleId: "dcr-00000000000000000000000000000000" },
};

describe("the shared delivery settings", () => {
  it("every sink's section takes the same keys with the same bounds, its own defaults", () => {
    for (const factory of sinkFactories) {
      const base = required[factory.section] ?? {};
      const parsed = factory.settingsSchema.parse(base) as { maxBatchRecords: number; lingerMs: number };
      expect(parsed.maxBatchRecords, factory.section).toBeGreaterThan(0);
      expect(parsed.lingerMs, factory.section).toBeGreaterThanOrEqual(0);
      expect(factory.settingsSchema.safeParse({ ...base, lingerMs: 60_000 }).success, factory.section).toBe(true);
      expect(factory.settingsSchema.safeParse({ ...base, lingerMs: 60_001 }).success, factory.section).toBe(false);
      expect(factory.settingsSchema.safeParse({ ...base, maxBatchRecords: 100_001 }).success, factory.section).toBe(
        false,
      );
      expect(factory.settingsSchema.safeParse({ ...base, maxBatchRecords: 0 }).success, factory.section).toBe(false);
      const withRetry = factory.settingsSchema.parse({ ...base, retry: { maxDelayMs: 5000 } }) as { retry: unknown };
      expect(withRetry.retry, factory.section).toEqual({ maxDelayMs: 5000 });
      expect(factory.settingsSchema.safeParse({ ...base, retry: { maxDelay: 5000 } }).success, factory.section).toBe(
        false,
      );
    }
  });

  it("a sink's retry fields override the agent's one by one; absent ones are the agent's", () => {
    expect(sinkRetryPolicy(agentPolicy, undefined)).toEqual(agentPolicy);
    expect(sinkRetryPolicy(agentPolicy, { maxDelayMs: 5000 })).toEqual({ ...agentPolicy, maxDelayMs: 5000 });
    expect(sinkRetryPolicy(agentPolicy, { initialDelayMs: 50, multiplier: 3 })).toEqual({
      initialDelayMs: 50,
      maxDelayMs: 60_000,
      multiplier: 3,
    });
  });

  it("the drain stage schedules a sink's retries with its own policy, the others' with the agent's", () => {
    const dir = mkdtempSync(join(tmpdir(), "sef-delivery-settings-"));
    const outbox = openOutbox({ dataDir: dir });
    try {
      const own = new JsonlSink(join(dir, "a.jsonl"), undefined, {
        maxBatchRecords: 7,
        lingerMs: 0,
        retry: { maxDelayMs: 1000 },
      });
      const stage = new DrainStage({
        sinks: [own, new StdoutSink(process.stdout)],
        outbox,
        committed: new RecordsCommitted(),
        clock: instantClock(),
        retryPolicy: agentPolicy,
        deadLetters: new DeadLetterFile(join(dir, "dead-letter")),
        logger: silentLogger(),
        metrics: new AgentMetrics(),
      });
      expect(own.maxBatchRecords).toBe(7);
      expect(stage.drainers.map((d) => d.name)).toEqual([own.name, "stdout"]);
      expect(stage.retryPolicyOf(own)).toEqual({ ...agentPolicy, maxDelayMs: 1000 });
      expect(stage.retryPolicyOf(new StdoutSink())).toEqual(agentPolicy);
    } finally {
      outbox.close();
    }
  });
});
