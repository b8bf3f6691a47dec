// A sink's health alone, on a fake clock: the count of failed attempts and the backoff it earns (a server's hint wins
// and is counted as throttled time), the failing gauge and retry counter, warn at the first failure and every tenth,
// "recovered" only after a failure, progress by delivery or idleness, dead letters since the last delivery.
import { describe, expect, it } from "vitest";
import { Writable } from "node:stream";
import { SinkHealth } from "../../src/agent/delivery/sink-health.js";
import { AgentMetrics } from "../../src/agent/observability/metrics.js";
import { createLogger } from "../../src/agent/observability/logger.js";
import { FakeClock } from "../helpers/fake-clock.js";

function setUp() {
  const chunks: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk.toString("utf8"));
      done();
    },
  });
  const clock = new FakeClock(1_000_000);
  const metrics = new AgentMetrics();
  const health = new SinkHealth({
    sink: "s",
    clock,
    retryPolicy: { initialDelayMs: 1000, maxDelayMs: 30_000, multiplier: 2 },
    logger: createLogger({ level: "debug", destination }),
    metrics,
    random: () => 1 - 1e-9,
  });
  const lines = () =>
    chunks
      .join("")
      .split("\n")
      .filter((l) => l !== "")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  const value = async (metric: { get(): Promise<{ values: Array<{ labels: object; value: number }> }> }) =>
    (await metric.get()).values.filter((v) => (v.labels as { sink?: string }).sink === "s").map((v) => v.value);
  return { clock, metrics, health, lines, value };
}

describe("SinkHealth", () => {
  it("starts healthy, with the failing gauge at 0 and progress at its creation", async () => {
    const { clock, metrics, health, value } = setUp();
    expect(await value(metrics.sinkFailing)).toEqual([0]);
    expect(health.status()).toEqual({
      consecutiveFailures: 0,
      failingSinceMs: null,
      lastError: null,
      lastProgressMs: clock.monotonicMs(),
      deadLetteredSinceDelivery: 0,
      needsOperator: null,
    });
  });

  it("counts failures: the backoff doubles up to its cap, a hint wins and counts as throttled time", async () => {
    const { clock, metrics, health, value } = setUp();
    const since = clock.monotonicMs();
    expect(health.failed("down", undefined)).toBe(1000);
    clock.jump(5);
    expect(health.failed("down", undefined)).toBe(2000);
    expect(health.retryDelayMs(undefined)).toBe(2000); // a record's own delay at the same count
    expect(await value(metrics.throttledSeconds)).toEqual([]);
    const hintedMs = health.failed("busy", 4000);
    expect(hintedMs).toBeGreaterThanOrEqual(4000);
    expect(await value(metrics.throttledSeconds)).toEqual([hintedMs / 1000]);
    for (let i = 0; i < 5; i++) health.failed("down", undefined);
    expect(health.failed("down", undefined)).toBe(30_000);
    expect(health.status()).toMatchObject({ consecutiveFailures: 9, failingSinceMs: since, lastError: "down" });
    expect(await value(metrics.sinkFailing)).toEqual([1]);
    expect(await value(metrics.retries)).toEqual([9]);
  });

  it("warns at the first failure and every tenth, debug in between; says it recovered only after a failure", () => {
    const { health, lines } = setUp();
    health.recovered();
    for (let i = 0; i < 11; i++) health.failed("down", undefined);
    health.recovered();
    health.recovered();
    const said = lines().map((l) => [l.level, l.msg, l.attempt ?? l.afterAttempts]);
    expect(said.filter(([level]) => level !== "debug")).toEqual([
      ["warn", "send failed, will retry", 1],
      ["warn", "send failed, will retry", 10],
      ["info", "sink recovered", 11],
    ]);
    expect(said.filter(([level]) => level === "debug")).toHaveLength(9);
  });

  it("keeps what needs an operator until a failure says otherwise or the sink recovers", async () => {
    const { metrics, health, value } = setUp();
    health.failed("401 unauthorized", undefined, "401 unauthorized");
    health.failed("could not record the outcome", undefined);
    expect(health.status().needsOperator).toBe("401 unauthorized");
    health.failed("503", undefined, null);
    expect(health.status().needsOperator).toBeNull();
    health.failed("401 unauthorized", undefined, "401 unauthorized");
    health.recovered();
    expect(health.status()).toMatchObject({
      consecutiveFailures: 0,
      failingSinceMs: null,
      lastError: null,
      needsOperator: null,
    });
    expect(await value(metrics.sinkFailing)).toEqual([0]);
    expect(health.failed("down", undefined)).toBe(1000); // the count starts again
  });

  it("progress: a delivery (not a dead letter) moves it and clears the dead letters since; idleness moves it", () => {
    const { clock, health } = setUp();
    const start = clock.monotonicMs();
    clock.jump(10);
    health.progressed(0, 2);
    health.progressed(0, 1);
    expect(health.status()).toMatchObject({ lastProgressMs: start, deadLetteredSinceDelivery: 3 });
    health.progressed(1, 1);
    expect(health.status()).toMatchObject({ lastProgressMs: start + 10, deadLetteredSinceDelivery: 1 });
    clock.jump(10);
    health.idle();
    expect(health.status().lastProgressMs).toBe(start + 20);
  });
});
