// The pure readiness judgement for sinks: a failure that needs an operator is reported at once, a stall only past
// the configured limit, and a run of dead-letters with nothing delivered in between; each line names the sink.
import { describe, expect, it } from "vitest";
import {
  defaultReadinessLimits,
  evaluateReadiness,
  readinessConfigSchema,
} from "../../src/agent/observability/http-server.js";

const healthy = { lastGoodPollAgeMs: 100, storeWritable: true };
const limits = defaultReadinessLimits(1000, 60_000);

describe("evaluateReadiness: sinks", () => {
  it("is ready while sinks flow, or idle, or have a short stall or a lone dead-letter", () => {
    const verdict = evaluateReadiness(
      {
        ...healthy,
        sinks: [
          { name: "jsonl:/x", stuckForMs: 0 },
          { name: "webhook", stuckForMs: 59_000, deadLetteredSinceDelivery: 2, needsOperator: null },
        ],
      },
      limits,
    );
    expect(verdict).toEqual({ ready: true, failed: [] });
  });

  it("names the sink for each failed check", () => {
    const verdict = evaluateReadiness(
      {
        ...healthy,
        sinks: [
          { name: "loganalytics", stuckForMs: 0, needsOperator: "HTTP 403 Forbidden: no role" },
          { name: "webhook", stuckForMs: 61_000 },
          { name: "eventhubs", stuckForMs: 0, deadLetteredSinceDelivery: 3 },
        ],
      },
      limits,
    );
    expect(verdict.ready).toBe(false);
    expect(verdict.failed).toEqual([
      "sink loganalytics: failing: HTTP 403 Forbidden: no role",
      "sink webhook: delivered nothing for 61000 ms while records wait (limit 60000 ms)",
      "sink eventhubs: dead-lettered the last 3 records it was given, none delivered since",
    ]);
  });

  it("reads readiness.sinkStallMs with a 10-minute default", () => {
    expect(readinessConfigSchema.parse({})).toEqual({ sinkStallMs: 600_000 });
    expect(() => readinessConfigSchema.parse({ sinkStallMs: 10 })).toThrow();
    expect(defaultReadinessLimits(1000).maxSinkStuckMs).toBe(600_000);
  });
});
