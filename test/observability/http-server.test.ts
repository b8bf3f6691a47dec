import { afterEach, describe, expect, it } from "vitest";
import { request } from "undici";
import {
  defaultReadinessLimits,
  evaluateReadiness,
  metricsServerConfigSchema,
  startObservabilityServer,
  type ObservabilityServer,
  type ReadinessSnapshot,
} from "../../src/agent/observability/http-server.js";
import { AgentMetrics } from "../../src/agent/observability/metrics.js";
import { silentLogger } from "../../src/agent/observability/logger.js";

const servers: ObservabilityServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

const healthy: ReadinessSnapshot = {
  lastGoodPollAgeMs: 800,
  storeWritable: true,
  sinks: [{ name: "stdout", stuckForMs: 0 }],
};
const limits = defaultReadinessLimits(1000);

async function start(readiness: () => ReadinessSnapshot, metrics = new AgentMetrics()): Promise<ObservabilityServer> {
  const server = await startObservabilityServer({
    host: "127.0.0.1",
    port: 0,
    metrics,
    readiness,
    limits,
    logger: silentLogger(),
  });
  servers.push(server);
  return server;
}

async function get(
  url: string,
  method: "GET" | "HEAD" | "POST" = "GET",
): Promise<{ status: number; type: string; body: string }> {
  const res = await request(url, { method });
  return { status: res.statusCode, type: String(res.headers["content-type"]), body: await res.body.text() };
}

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** A strict-enough parser of the Prometheus text format: every line is a HELP/TYPE comment or a valid sample. */
function parsePrometheus(text: string): { samples: Sample[]; types: Map<string, string> } {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split("\n")) {
    if (line === "") continue;
    const type = /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$/.exec(line);
    if (type) {
      types.set(type[1]!, type[2]!);
      continue;
    }
    if (/^# HELP [a-zA-Z_:][a-zA-Z0-9_:]* .*$/.test(line)) continue;
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (-?[0-9.eE+-]+|NaN|\+Inf|-Inf)$/.exec(line);
    if (!sample) throw new Error(`not a valid Prometheus line: ${line}`);
    const labels: Record<string, string> = {};
    for (const m of (sample[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[m[1]!] = m[2]!;
    samples.push({ name: sample[1]!, labels, value: Number(sample[3]) });
  }
  return { samples, types };
}

describe("observability server", () => {
  it("serves /metrics in Prometheus text format with the agent's metrics", async () => {
    const metrics = new AgentMetrics();
    metrics.polls.inc({ outcome: "ok" }, 5);
    metrics.approvals.inc({ outcome: "approved" });
    metrics.outboxDepth.set({ sink: "webhook" }, 12);
    for (const seconds of [0.002, 0.03, 0.03]) metrics.observePollSeconds(seconds); // observed when scraped
    const server = await start(() => ({ ...healthy, lastGoodPollAgeMs: 2500 }), metrics);
    expect(server.url).toBe(`http://127.0.0.1:${server.port}`);
    expect(server.port).toBeGreaterThan(0);

    const res = await get(`${server.url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.type).toContain("text/plain");
    const { samples, types } = parsePrometheus(res.body);
    const value = (name: string, labels: Record<string, string> = {}): number | undefined =>
      samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
    expect(types.get("sef_polls_total")).toBe("counter");
    expect(value("sef_polls_total", { outcome: "ok" })).toBe(5);
    expect(value("sef_approvals_total", { outcome: "approved" })).toBe(1);
    expect(value("sef_outbox_depth", { sink: "webhook" })).toBe(12);
    expect(types.get("sef_poll_duration_seconds")).toBe("histogram");
    expect(value("sef_poll_duration_seconds_count")).toBe(3);
    expect(value("sef_poll_duration_seconds_bucket", { le: "0.005" })).toBe(1);
    expect(value("sef_poll_duration_seconds_sum")).toBeCloseTo(0.062, 6);
    // Refreshed from the readiness snapshot at scrape time.
    expect(value("sef_last_good_poll_age_seconds")).toBe(2.5);
  });

  it("reports -1 as poll age before the first successful poll", async () => {
    const server = await start(() => ({ ...healthy, lastGoodPollAgeMs: null }));
    const { samples } = parsePrometheus((await get(`${server.url}/metrics`)).body);
    expect(samples.find((s) => s.name === "sef_last_good_poll_age_seconds")?.value).toBe(-1);
  });

  it("answers /healthz with 200 ok", async () => {
    const server = await start(() => ({ ...healthy, storeWritable: false }));
    expect(await get(`${server.url}/healthz`)).toMatchObject({ status: 200, body: "ok\n" });
  });

  it("answers /readyz 200 when every check passes and 503 listing the failed checks otherwise", async () => {
    let snapshot: ReadinessSnapshot = healthy;
    const server = await start(() => snapshot);
    const ready = await get(`${server.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(JSON.parse(ready.body)).toEqual({ ready: true, failed: [] });

    snapshot = {
      lastGoodPollAgeMs: 45_000,
      storeWritable: false,
      sinks: [
        { name: "stdout", stuckForMs: 0 },
        { name: "webhook", stuckForMs: 11 * 60_000 },
      ],
    };
    const notReady = await get(`${server.url}/readyz`);
    expect(notReady.status).toBe(503);
    expect(notReady.type).toBe("application/json");
    const body = JSON.parse(notReady.body) as { ready: boolean; failed: string[] };
    expect(body.ready).toBe(false);
    expect(body.failed).toEqual([
      "poll: last successful poll 45000 ms ago (limit 30000 ms)",
      "store: not writable",
      "sink webhook: delivered nothing for 660000 ms while records wait (limit 600000 ms)",
    ]);
  });

  it("answers unknown paths with 404, other methods with 405, HEAD without a body", async () => {
    const server = await start(() => healthy);
    expect((await get(`${server.url}/nope`)).status).toBe(404);
    expect((await get(`${server.url}/metrics`, "POST")).status).toBe(405);
    expect(await get(`${server.url}/healthz`, "HEAD")).toMatchObject({ status: 200, body: "" });
  });

  it("answers 500 (and stays up) when the readiness callback throws", async () => {
    const server = await start(() => {
      throw new Error("store closed");
    });
    expect((await get(`${server.url}/readyz`)).status).toBe(500);
    expect((await get(`${server.url}/healthz`)).status).toBe(200);
  });

  it("rejects when the port is taken", async () => {
    const first = await start(() => healthy);
    await expect(
      startObservabilityServer({
        host: "127.0.0.1",
        port: first.port,
        metrics: new AgentMetrics(),
        readiness: () => healthy,
        limits,
        logger: silentLogger(),
      }),
    ).rejects.toThrow(/EADDRINUSE/);
  });
});

describe("readiness rules", () => {
  it("defaults: poll age max(10 × interval, 30 s), sinks 10 min", () => {
    expect(defaultReadinessLimits(1000)).toEqual({ maxPollAgeMs: 30_000, maxSinkStuckMs: 600_000 });
    expect(defaultReadinessLimits(5000)).toEqual({ maxPollAgeMs: 50_000, maxSinkStuckMs: 600_000 });
  });

  it("is not ready before the first successful poll; limits are inclusive", () => {
    expect(evaluateReadiness({ ...healthy, lastGoodPollAgeMs: null }, limits)).toEqual({
      ready: false,
      failed: ["poll: no successful poll yet"],
    });
    expect(evaluateReadiness({ ...healthy, lastGoodPollAgeMs: 30_000 }, limits).ready).toBe(true);
    expect(evaluateReadiness({ ...healthy, lastGoodPollAgeMs: 30_001 }, limits).ready).toBe(false);
    expect(evaluateReadiness({ ...healthy, sinks: [{ name: "a", stuckForMs: 600_000 }] }, limits).ready).toBe(true);
  });

  it("config section defaults", () => {
    expect(metricsServerConfigSchema.parse({})).toEqual({
      enabled: true,
      host: "127.0.0.1",
      port: 9464,
      maxConnections: 16,
      headersTimeoutMs: 5000,
      requestTimeoutMs: 10_000,
      keepAliveTimeoutMs: 5000,
    });
    expect(metricsServerConfigSchema.safeParse({ port: 70000 }).success).toBe(false);
    expect(metricsServerConfigSchema.safeParse({ maxConnections: 0 }).success).toBe(false);
    expect(metricsServerConfigSchema.safeParse({ keepAliveTimeoutMs: 0 }).success).toBe(false);
  });
});
