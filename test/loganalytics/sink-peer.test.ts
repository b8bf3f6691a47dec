// The Log Analytics sink with the real LogsIngestionClient against the local HTTPS ingestion peer:
// normal delivery, every fault ending delivered or dead-lettered, size bounds, schema drift, throttling pauses.
import { randomBytes } from "node:crypto";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  maxRequestBodyBytes,
  startLogsIngestionEmulator,
  type Fault,
  type LogsIngestionEmulator,
} from "../../src/testbed/peers/logs-ingestion/index.js";
import { silentLogger } from "../../src/agent/observability/logger.js";
import { LogAnalyticsSink, type LogAnalyticsSinkOptions } from "../../src/agent/sinks/loganalytics/sink.js";
import { logAnalyticsSettingsSchema, type LogAnalyticsSettings } from "../../src/agent/sinks/loganalytics/settings.js";
import { RulePauses } from "../../src/agent/sinks/loganalytics/rule-pauses.js";
import type { SefRecord } from "../../src/contract/record.js";
import { instantClock } from "../helpers/fake-clock.js";
import { entries, localTokenCredential, oneRecordOfEachType, transitionRecord } from "./helpers.js";
import { drainThroughLedger as drainUntilDone } from "../helpers/ledger-drain.js";

let peer: LogsIngestionEmulator;
const sinks: LogAnalyticsSink[] = [];

beforeAll(async () => {
  peer = await startLogsIngestionEmulator();
});
afterAll(async () => {
  await Promise.all(sinks.map((s) => s.close()));
  await peer.close();
});
beforeEach(() => {
  peer.faults.clear();
});
afterEach(() => {
  // What Azure would do without a word: nothing the sink sent may have lost a column, and no request may have been
  // over 1 MB before or after gzip (the service's 413).
  expect(peer.droppedColumns()).toMatchObject({ total: 0 });
  const { sizes, uncompressedSizes } = peer.requests();
  for (const size of [...sizes, ...uncompressedSizes]) expect(size).toBeLessThanOrEqual(maxRequestBodyBytes);
});

function settings(overrides: Partial<LogAnalyticsSettings> = {}): LogAnalyticsSettings {
  return logAnalyticsSettingsSchema.parse({
    endpoint: peer.endpoint,
    ruleId: peer.ruleId,
    caCertFile: peer.caCertPath,
    ...overrides,
  });
}

function makeSink(
  overrides: Partial<LogAnalyticsSettings> = {},
  options: Partial<LogAnalyticsSinkOptions> = {},
): LogAnalyticsSink {
  const sink = new LogAnalyticsSink({
    settings: settings(overrides),
    logger: silentLogger(),
    credential: localTokenCredential(),
    pauses: new RulePauses(),
    ...options,
  });
  sinks.push(sink);
  return sink;
}

/** Records with ids unique to this test, so the shared peer's rows can be told apart. */
function records(count: number, tag = randomBytes(4).toString("hex"), extra: Partial<SefRecord> = {}): SefRecord[] {
  return Array.from(
    { length: count },
    (_, i) => ({ ...transitionRecord(i, { EventId: `${tag}-${i}`, RecordId: `${tag}-${i}` }), ...extra }) as SefRecord,
  );
}

function deliveredCounts(all: readonly SefRecord[]): Map<string, number> {
  const ids = new Set(all.map((r) => r.RecordId));
  const counts = new Map<string, number>();
  for (const row of peer.rows()) {
    const id = String(row.RecordId);
    if (ids.has(id)) counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
}

function expectExactlyOnce(all: readonly SefRecord[]): void {
  const counts = deliveredCounts(all);
  expect(counts.size).toBe(all.length);
  for (const [id, n] of counts) expect(n, id).toBe(1);
}

describe("normal delivery", () => {
  it("delivers every record exactly once, every record type, over HTTPS with a bearer token", async () => {
    const all = [
      ...records(250),
      ...oneRecordOfEachType().map((r) => ({ ...r, RecordId: `${r.RecordId}-${randomBytes(3).toString("hex")}` })),
    ];
    const sink = makeSink();
    const result = await sink.send(entries(all), new AbortController().signal);
    expect(result.every((o) => o.kind === "delivered")).toBe(true);
    expectExactlyOnce(all);
    expect(sink.stats.recordsAccepted).toBe(all.length);
    const stored = peer.rows().find((r) => r.RecordId === all[0]!.RecordId);
    expect(stored).toEqual(JSON.parse(JSON.stringify(all[0])));
  });

  it("refuses a plain-http endpoint", () => {
    expect(() => logAnalyticsSettingsSchema.parse({ endpoint: "http://127.0.0.1:1", ruleId: "dcr-1" })).toThrow(
      /https/,
    );
  });

  it("does not trust the peer's certificate without the CA setting", async () => {
    const sink = makeSink({ caCertFile: undefined });
    const result = await sink.send(entries(records(1)), new AbortController().signal);
    expect(result[0]!.kind).toBe("retry");
    expect(result[0]!.kind === "retry" && result[0]!.reason).toMatch(/certificate/i);
  });
});

describe("faults end with every record delivered or dead-lettered", () => {
  const retryFaults: { name: string; fault: Fault; waitMs: number | undefined }[] = [
    { name: "429 with Retry-After seconds", fault: { status: 429, headers: { "Retry-After": "1" } }, waitMs: 1000 },
    {
      name: "429 with Retry-After HTTP date",
      fault: { status: 429, headers: { "Retry-After": "DATE" } },
      waitMs: undefined,
    },
    { name: "429 with retry-after-ms", fault: { status: 429, headers: { "retry-after-ms": "30" } }, waitMs: 30 },
    {
      name: "429 with x-ms-retry-after-ms",
      fault: { status: 429, headers: { "x-ms-retry-after-ms": "40" } },
      waitMs: 40,
    },
    { name: "429 without a hint", fault: { status: 429 }, waitMs: undefined },
    { name: "503 with Retry-After", fault: { status: 503, headers: { "Retry-After": "2" } }, waitMs: 2000 },
    { name: "503 without a hint", fault: { status: 503 }, waitMs: undefined },
    { name: "500", fault: { status: 500 }, waitMs: undefined },
    { name: "408", fault: { status: 408 }, waitMs: undefined },
    { name: "connection reset", fault: { reset: true }, waitMs: undefined },
  ];
  for (const { name, fault, waitMs } of retryFaults) {
    it(`${name}: retried, then delivered exactly once`, async () => {
      const clock = instantClock(Date.now());
      const withDate =
        fault.headers?.["Retry-After"] === "DATE"
          ? { ...fault, headers: { "Retry-After": new Date(Date.now() + 60_000).toUTCString() } }
          : fault;
      peer.faults.failNext(2, withDate);
      const all = records(30);
      const sink = makeSink({}, { clock });
      const outcome = await drainUntilDone(sink, entries(all), { clock });
      expect(outcome.rejected).toEqual([]);
      expect(outcome.attempts).toBe(3);
      if (waitMs !== undefined) expect(outcome.waitsMs).toEqual([waitMs, waitMs]);
      else if (fault.headers?.["Retry-After"] === "DATE") {
        // The same date both times: the fake clock has waited past it after the first pause.
        expect(outcome.waitsMs[0]).toBeGreaterThan(50_000);
        expect(outcome.waitsMs[1]).toBeLessThanOrEqual(1000);
      } else expect(outcome.waitsMs).toEqual([5, 10]); // no hint: the drainer's own backoff (random 0: half the ceiling)
      expectExactlyOnce(all);
    });
  }

  it("slow answers within the request timeout: delivered exactly once", async () => {
    peer.faults.failNext(1, { delayMs: 300 });
    const all = records(10);
    const outcome = await drainUntilDone(makeSink({ requestTimeoutMs: 5000 }), entries(all));
    expect(outcome).toMatchObject({ rejected: [], attempts: 1 });
    expectExactlyOnce(all);
  });

  it("slow answers past the request timeout: retried, none lost (at least once)", async () => {
    // A wide margin between the timeout and an ordinary answer (TLS, token, gzip): a loaded CI machine must not make
    // the second, unhindered request time out too.
    peer.faults.failNext(1, { delayMs: 3000 });
    const all = records(10);
    const outcome = await drainUntilDone(makeSink({ requestTimeoutMs: 1000 }), entries(all));
    expect(outcome.rejected).toEqual([]);
    expect(outcome.attempts).toBe(2);
    const counts = deliveredCounts(all);
    expect(counts.size).toBe(all.length);
    for (const n of counts.values()) expect(n).toBeGreaterThanOrEqual(1);
  });

  for (const status of [400, 413]) {
    it(`${status}: the request's records are dead-lettered with the service's message`, async () => {
      peer.faults.failNext(1, { status });
      const all = records(5);
      const sink = makeSink();
      const outcome = await drainUntilDone(sink, entries(all));
      expect(outcome.attempts).toBe(1);
      expect(outcome.rejected.map((r) => r.seq)).toEqual([1, 2, 3, 4, 5]);
      expect(outcome.rejected[0]!.reason).toBe(`HTTP ${status} ServiceError: injected fault: HTTP ${status}`);
      expect(deliveredCounts(all).size).toBe(0);
      expect(sink.stats.recordsRejected).toBe(5);
    });
  }

  for (const status of [401, 403, 404]) {
    it(`${status}: retried until Azure catches up (a role assignment, a DCR deployed later), nothing dead-lettered`, async () => {
      peer.faults.failNext(2, { status });
      const all = records(5);
      const sink = makeSink();
      const first = (await sink.send(entries(all), new AbortController().signal))[0]!;
      expect(first).toMatchObject({ kind: "retry", needsOperator: true });
      expect(first.kind === "retry" && first.reason).toMatch(
        new RegExp(`^HTTP ${status} ServiceError: injected fault: HTTP ${status} \\(.*records stay in the outbox\\)$`),
      );
      const outcome = await drainUntilDone(sink, entries(all));
      expect(outcome.rejected).toEqual([]);
      expect(outcome.attempts).toBe(2);
      expectExactlyOnce(all);
    });
  }

  it("a token for another audience: 401, retried with the peer's reason", async () => {
    const sink = makeSink({}, { credential: localTokenCredential("https://eventhubs.azure.net") });
    const result = (await sink.send(entries(records(3)), new AbortController().signal))[0]!;
    expect(result).toMatchObject({ kind: "retry", needsOperator: true });
    expect(result.kind === "retry" && result.reason).toMatch(
      /^HTTP 401 InvalidAuthenticationTokenAudience: The access token has the wrong audience/,
    );
  });

  it("an unknown rule: 404, retried (never dead-lettered)", async () => {
    const result = (
      await makeSink({ ruleId: "dcr-ffffffffffffffffffffffffffffffff" }).send(
        entries(records(2)),
        new AbortController().signal,
      )
    )[0]!;
    expect(result).toMatchObject({ kind: "retry", needsOperator: true });
    expect(result.kind === "retry" && result.reason).toMatch(
      /^HTTP 404 NotFound: Data collection rule with immutable Id 'dcr-ffffffffffffffffffffffffffffffff' not found/,
    );
  });
});

describe("schema drift", () => {
  it("the peer, like the service, answers 204 to a drifted row and drops the undeclared and mistyped columns silently", async () => {
    // Bypass the sink's own check with a raw HTTPS request carrying drifted rows, to a peer of its own (the shared
    // peer must never drop anything).
    const own = await startLogsIngestionEmulator();
    const { request } = await import("node:https");
    const { readFileSync } = await import("node:fs");
    const { mintLocalToken } = await import("../../src/testbed/peers/local-tokens.js");
    const body = JSON.stringify([
      transitionRecord(1),
      { ...transitionRecord(2), Undeclared: "x" },
      { ...transitionRecord(3), DurationInSeconds: "60" },
    ]);
    try {
      const answer = await new Promise<{ status: number; text: string }>((resolve, reject) => {
        const req = request(
          `${own.endpoint}/dataCollectionRules/${own.ruleId}/streams/${own.streamName}?api-version=2023-01-01`,
          {
            method: "POST",
            ca: readFileSync(own.caCertPath),
            headers: {
              authorization: `Bearer ${mintLocalToken("https://monitor.azure.com").token}`,
              "content-type": "application/json",
            },
          },
          (res) => {
            let text = "";
            res.on("data", (c: Buffer) => (text += c.toString()));
            res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
          },
        );
        req.on("error", reject);
        req.end(body);
      });
      expect(answer).toEqual({ status: 204, text: "" });
      expect(own.rows()).toHaveLength(3);
      expect(own.rows()[1]).not.toHaveProperty("Undeclared");
      expect(own.rows()[2]).not.toHaveProperty("DurationInSeconds");
      expect(own.droppedColumns()).toEqual({
        undeclaredColumns: { Undeclared: 1 },
        mistypedColumns: { DurationInSeconds: 1 },
        nonObjectRows: 0,
        total: 2,
      });
    } finally {
      await own.close();
    }
  });

  it("the sink dead-letters only the drifted record and delivers the rest", async () => {
    const all = records(6);
    const drifted = { ...all[2]!, Undeclared: true } as unknown as SefRecord;
    const batch = entries([...all.slice(0, 2), drifted, ...all.slice(3)]);
    const before = peer.requests().statuses["400"] ?? 0;
    const outcome = await drainUntilDone(makeSink(), batch);
    expect(outcome.rejected).toEqual([
      { seq: 3, reason: expect.stringContaining(`column "Undeclared" is not declared`) },
    ]);
    expect(deliveredCounts(all).size).toBe(5);
    expect(peer.requests().statuses["400"] ?? 0).toBe(before);
    expect(peer.droppedColumns().total).toBe(0);
  });
});

describe("size bounds", () => {
  it("splits a 10 MB backlog into requests that all fit: no 413, each ≤ 1 MiB on the wire and ≤ 1,000,000 bytes of JSON", async () => {
    const before = peer.requests();
    // Random text compresses poorly, so the wire size stays close to the JSON size.
    const all = Array.from({ length: 4000 }, (_, i) => ({
      ...transitionRecord(i, {
        RecordId: `big-${i}-${randomBytes(3).toString("hex")}`,
        Description: randomBytes(1900).toString("base64"),
      }),
    })) as SefRecord[];
    const total = all.reduce((n, r) => n + JSON.stringify(r).length, 0);
    expect(total).toBeGreaterThan(10_000_000);
    const sink = makeSink({ maxBatchRecords: 10_000 });
    const outcome = await drainUntilDone(sink, entries(all));
    expect(outcome).toMatchObject({ rejected: [], attempts: 1 });
    expectExactlyOnce(all);
    const after = peer.requests();
    const sizes = after.sizes.slice(before.count);
    const uncompressed = after.uncompressedSizes.slice(before.uncompressedSizes.length);
    expect(sizes.length).toBeGreaterThanOrEqual(10);
    for (const s of sizes) expect(s).toBeLessThanOrEqual(1024 * 1024);
    for (const s of uncompressed) expect(s).toBeLessThanOrEqual(1_000_000);
    expect(after.statuses["413"] ?? 0).toBe(before.statuses["413"] ?? 0);
  });

  it("dead-letters a record that can never fit and delivers its neighbours", async () => {
    const all = records(3);
    const huge = { ...all[1]!, Description: "x".repeat(1_000_000) } as SefRecord;
    const outcome = await drainUntilDone(makeSink(), entries([all[0]!, huge, all[2]!]));
    expect(outcome.rejected).toEqual([
      {
        seq: 2,
        reason: expect.stringMatching(/^record is 10\d{5} bytes of JSON, more than one request may carry \(1000000\)$/),
      },
    ]);
    expect(deliveredCounts([all[0]!, all[2]!]).size).toBe(2);
  });
});

describe("partial progress", () => {
  it("reports each record's outcome, and the drainer does not resend records already settled", async () => {
    // Three requests per batch (small request limit); the second request fails with 500; a record up front is rejected.
    const all = records(9);
    const drifted = { ...all[0]!, Undeclared: 1 } as unknown as SefRecord;
    const rowBytes = JSON.stringify(all[1]).length;
    const sink = makeSink({ maxRequestBytes: rowBytes * 3 + 4, maxConcurrentRequests: 1 });
    peer.faults.failNext(1, {}); // first request goes through
    peer.faults.failNext(1, { status: 500 });
    const batch = entries([drifted, ...all.slice(1)]);
    const outcome = await drainUntilDone(sink, batch);
    expect(outcome.results[0]!.map((o) => o.kind)).toEqual([
      "rejected",
      "delivered",
      "delivered",
      "delivered",
      "retry",
      "retry",
      "retry",
      "retry",
      "retry",
    ]);
    expect(outcome.results[0]![4]).toMatchObject({ reason: expect.stringContaining("HTTP 500") });
    expect(outcome.sentSeqs).toEqual([
      [1, 2, 3, 4, 5, 6, 7, 8, 9],
      [5, 6, 7, 8, 9],
    ]);
    expect(outcome.rejected).toEqual([{ seq: 1, reason: expect.stringContaining("Undeclared") }]);
    expectExactlyOnce(all.slice(1));
  });

  it("delivers the requests that went through before a failure, and retries only the rest", async () => {
    const all = records(9);
    const rowBytes = JSON.stringify(all[0]).length;
    const clock = instantClock(Date.now());
    const sink = makeSink({ maxRequestBytes: rowBytes * 3 + 4, maxConcurrentRequests: 1 }, { clock });
    peer.faults.failNext(1, {});
    peer.faults.failNext(1, { status: 503, headers: { "retry-after-ms": "5" } });
    const outcome = await drainUntilDone(sink, entries(all), { clock });
    // The 5 ms hint is clamped up to the policy's shortest backoff (a server hint never makes the drainer hammer).
    expect(outcome).toMatchObject({ rejected: [], attempts: 2, waitsMs: [10] });
    expect(outcome.sentSeqs[1]).toEqual([4, 5, 6, 7, 8, 9]);
    expectExactlyOnce(all);
  });
});

describe("throttling pauses the whole rule", () => {
  it("after a 429 with Retry-After, every sink on that rule refuses to send until the pause ends", async () => {
    const clock = instantClock(Date.now());
    const pauses = new RulePauses();
    const a = makeSink({}, { clock, pauses });
    const b = makeSink({}, { clock, pauses });
    const other = makeSink({ ruleId: "dcr-ffffffffffffffffffffffffffffffff" }, { clock, pauses });
    peer.faults.failNext(1, { status: 429, headers: { "Retry-After": "30" } });
    const all = records(4);
    expect((await a.send(entries(all), new AbortController().signal))[0]).toMatchObject({
      kind: "retry",
      afterMs: 30_000,
    });
    const count = peer.requests().count;
    clock.jump(10_000);
    expect((await a.send(entries(all), new AbortController().signal))[0]).toMatchObject({
      kind: "retry",
      afterMs: 20_000,
    });
    expect((await b.send(entries(all), new AbortController().signal))[0]).toMatchObject({
      kind: "retry",
      afterMs: 20_000,
    });
    expect(peer.requests().count).toBe(count); // nothing reached the service during the pause
    expect(pauses.remainingMs("dcr-ffffffffffffffffffffffffffffffff", clock.now())).toBe(0);
    const outcome = (await other.send(entries(records(1)), new AbortController().signal))[0]!;
    expect(outcome).toMatchObject({ kind: "retry", needsOperator: true }); // 404: sent, not paused, retried
    clock.jump(20_000);
    expect((await b.send(entries(all), new AbortController().signal)).every((o) => o.kind === "delivered")).toBe(true);
    expectExactlyOnce(all);
    expect(a.stats.throttledResponses).toBe(1);
  });
});

describe("stale records", () => {
  it("warns and counts when a batch's oldest record is older than the threshold", async () => {
    const clock = instantClock(Date.now());
    const lines: string[] = [];
    const { pino } = await import("pino");
    const logger = pino({ level: "warn" }, { write: (line: string) => lines.push(line) });
    const sink = makeSink({ staleWarningHours: 36 }, { clock, logger });
    const old = records(2).map((r, i) => ({
      ...r,
      TimeGenerated: new Date(clock.now() - (40 - i) * 3_600_000).toISOString(),
    }));
    expect((await sink.send(entries(old), new AbortController().signal))[0]!.kind).toBe("delivered");
    expect(sink.stats.staleBatches).toBe(1);
    expect(sink.stats.lastOldestRecordAgeMs).toBe(40 * 3_600_000);
    expect(lines.join("")).toContain("oldest undelivered record is 40.0 h old");
    expect((await sink.send(entries(records(1)), new AbortController().signal))[0]!.kind).toBe("delivered");
    expect(sink.stats.staleBatches).toBe(1);
  });
});
