// `--sink loganalytics` is registered, its settings carry the documented defaults, and the bench drains end to end.
import { describe, expect, it } from "vitest";
import { silentLogger } from "../../src/agent/observability/logger.js";
import { findSinkFactory, parseSinkSpec } from "../../src/agent/sinks/registry.js";
import { benchLogAnalyticsDrain } from "../bench/loganalytics-drain.js";

describe("loganalytics sink factory", () => {
  it("is registered, takes no argument and applies defaults", async () => {
    expect(parseSinkSpec("loganalytics")).toEqual({ type: "loganalytics", argument: undefined });
    expect(() => parseSinkSpec("loganalytics:x")).toThrow(/takes no argument/);
    const factory = findSinkFactory("loganalytics");
    const settings = factory.settingsSchema.parse({
      endpoint: "https://dce.westeurope-1.ingest.monitor.azure.com",
      ruleId: "dcr-1",
    });
    expect(settings).toEqual({
      endpoint: "https://dce.westeurope-1.ingest.monitor.azure.com",
      ruleId: "dcr-1",
      streamName: "Custom-ScheduledEvents",
      credential: "managedIdentity",
      audience: "https://monitor.azure.com",
      maxRequestBytes: 1_000_000,
      maxBatchRecords: 10_000,
      lingerMs: 1000,
      maxConcurrentRequests: 2,
      maxConcurrentSends: 2,
      requestTimeoutMs: 30_000,
      staleWarningHours: 36,
    });
    expect(() =>
      factory.settingsSchema.parse({ endpoint: "https://x", ruleId: "dcr-1", maxRequestBytes: 2_000_000 }),
    ).toThrow();
    expect(() => factory.settingsSchema.parse({ endpoint: "https://x", ruleId: "dcr-1", typo: 1 })).toThrow();
    const sink = await factory.create({
      argument: undefined,
      settings,
      context: { logger: silentLogger(), dataDir: "/tmp", agentVersion: "0.1.0" },
    });
    expect(sink).toMatchObject({ name: "loganalytics", maxBatchRecords: 10_000, lingerMs: 1000 });
    await sink.close();
  });

  it("the drain benchmark runs (small backlog)", async () => {
    const result = await benchLogAnalyticsDrain(2000);
    expect(result.records).toBe(2000);
    expect(result.recordsPerSecond).toBeGreaterThan(0);
  });
});
