// The poll stage on its own (pipeline/poll-stage.ts): one poll against a local IMDS peer over HTTP, on a fake clock —
// what it hands the collect stage, how it counts and logs good, failed and slow polls, the backoff after failures,
// store failures, wall-clock steps, and the VM identity read at start.
import { afterEach, describe, expect, it } from "vitest";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { pino } from "pino";
import { loadConfig } from "../../src/agent/config/load.js";
import type { AgentConfig } from "../../src/agent/config/schema.js";
import { AgentMetrics } from "../../src/agent/observability/metrics.js";
import { PollStage, type PollStageOptions } from "../../src/agent/pipeline/poll-stage.js";
import { pollBackoffMs } from "../../src/agent/pipeline/poll-backoff.js";
import type { ScheduledEventsDocument } from "../../src/agent/imds/document.js";
import type { VmIdentity } from "../../src/contract/record.js";
import { FakeClock, flushAsync } from "../helpers/fake-clock.js";
import { metricValue } from "../helpers/metrics.js";
import { waitFor } from "../helpers/wait.js";

type Answer = (req: IncomingMessage, res: ServerResponse) => void;
const servers: Server[] = [];
const stages: PollStage[] = [];
afterEach(async () => {
  await Promise.all(stages.splice(0).map((s) => s.close()));
  await Promise.all(
    servers.splice(0).map((s) => {
      s.closeAllConnections(); // a request a test held unanswered
      return new Promise((r) => s.close(r));
    }),
  );
});

const documentOf = (incarnation: number) => ({ DocumentIncarnation: incarnation, Events: [] });
const json = (status: number, body: unknown, headers: Record<string, string> = {}): Answer => {
  return (_req, res) => {
    res.writeHead(status, { "Content-Type": "application/json", ...headers });
    res.end(typeof body === "string" ? body : JSON.stringify(body));
  };
};
const compute = {
  name: "WestNO_0",
  vmId: "11111111-2222-3333-4444-555555555555",
  resourceId: "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/WestNO_0",
  subscriptionId: "s",
  resourceGroupName: "rg",
  location: "westeurope",
  vmScaleSetName: "",
  zone: "1",
  tagsList: [],
};

/** Requests each peer received, by kind (the last peer started). */
const received = { polls: 0, computes: 0 };
/** Answers a request later (a test that holds one). */
const held =
  (into: ServerResponse[]): Answer =>
  (_req, res) =>
    void into.push(res);

/** An IMDS peer answering each Scheduled Events request with the next answer queued (the last one repeats). */
async function imdsPeer(answers: Answer[], computeAnswer: Answer = json(200, compute)): Promise<string> {
  received.polls = 0;
  received.computes = 0;
  const server = createServer((req, res) => {
    if (req.url?.startsWith("/metadata/instance/compute")) {
      received.computes += 1;
      return computeAnswer(req, res);
    }
    received.polls += 1;
    const answer = answers.length > 1 ? answers.shift()! : answers[0]!;
    answer(req, res);
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const unknownVm: VmIdentity = {
  VmName: "",
  VmId: "",
  VmResourceId: "",
  SubscriptionId: "",
  ResourceGroup: "",
  Location: "",
  VmScaleSetName: "",
  Zone: "",
  Tags: {},
};

interface Harness {
  stage: PollStage;
  clock: FakeClock;
  metrics: AgentMetrics;
  logs: Array<Record<string, unknown>>;
  ingested: Array<{ incarnation: number; nowMs: number; clockStepMs: number }>;
  blind: { count: number };
  identities: VmIdentity[];
  abort: AbortController;
}

function harness(
  url: string,
  over: Partial<PollStageOptions> = {},
  pollIntervalMs = "200",
  configOver: Partial<AgentConfig> = {},
): Harness {
  const loaded = loadConfig({
    env: {},
    flags: { imdsUrl: url, dataDir: "/nonexistent", pollIntervalMs, sinks: ["stdout"] },
  });
  const config = { ...loaded.config, ...configOver };
  const clock = new FakeClock(Date.parse("2026-11-21T10:00:00Z"));
  const logs: Array<Record<string, unknown>> = [];
  const logger = pino(
    { level: "debug" },
    { write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) },
  );
  const metrics = new AgentMetrics();
  const ingested: Harness["ingested"] = [];
  const blind = { count: 0 };
  const identities: VmIdentity[] = [];
  const abort = new AbortController();
  const stage = new PollStage(
    {
      config,
      clock,
      logger,
      metrics,
      initialVm: unknownVm,
      onIdentity: (vm) => identities.push(vm),
      onBlind: () => (blind.count += 1),
      ingest: (document: ScheduledEventsDocument, nowMs: number, clockStepMs: number) => {
        ingested.push({ incarnation: document.DocumentIncarnation, nowMs, clockStepMs });
        return document.DocumentIncarnation % 2 === 1; // odd incarnations change something
      },
      random: () => 0.5,
      ...over,
    },
    abort.signal,
  );
  stages.push(stage);
  return { stage, clock, metrics, logs, ingested, blind, identities, abort };
}

/** Each step is a loopback request or two: seconds are plenty, and a broken stage fails fast (under mutation too). */
const soon = { timeoutMs: 5000 };

/** `prepare()`, failing at once if it holds longer than a loopback read or two. */
async function prepare(h: Harness): Promise<void> {
  let prepared = false;
  const preparing = h.stage.prepare().then(() => (prepared = true));
  await waitFor("prepare() to return", () => prepared, soon);
  await preparing;
}

/** One poll a second after the last (the client's rate limit never waits on the fake clock). */
async function poll(h: Harness): Promise<number> {
  h.clock.jump(1000);
  return h.stage.pollOnce();
}
const messages = (h: Harness, level?: number) =>
  h.logs.filter((l) => level === undefined || l.level === level).map((l) => String(l.msg));

describe("PollStage.pollOnce", () => {
  it("hands each document to the collect stage with the wall time, and counts a change apart from no change", async () => {
    const h = harness(await imdsPeer([json(200, documentOf(1)), json(200, documentOf(2))]));
    expect(await poll(h)).toBe(200);
    const firstWallMs = h.clock.now();
    const firstMonotonicMs = h.clock.monotonicMs();
    expect(await poll(h)).toBe(200);
    expect(h.ingested).toEqual([
      { incarnation: 1, nowMs: firstWallMs, clockStepMs: 0 },
      { incarnation: 2, nowMs: h.clock.now(), clockStepMs: 0 },
    ]);
    expect(h.stage.outcomes).toMatchObject({ ok: 1, unchanged: 1, http_error: 0 });
    expect(h.stage.stats).toEqual({
      ok: 2,
      failed: 0,
      consecutiveFailures: 0,
      lastGoodPollMs: firstMonotonicMs + 1000,
      lastError: null,
    });
    expect(h.stage.lastGoodPollWallMs).toBe(h.clock.now());
    expect(h.stage.lastIncarnation).toBe(2);
    expect(h.blind.count).toBe(0);
    expect(messages(h)).toEqual([]);
  });

  it("backs off after failed polls as the policy says, warns on the first and every tenth, then says it recovered", async () => {
    const answers: Answer[] = [...Array.from({ length: 10 }, () => json(500, "busy")), json(200, documentOf(7))];
    const h = harness(await imdsPeer(answers));
    const waits: number[] = [];
    for (let i = 0; i < 10; i++) waits.push(await poll(h));
    expect(waits).toEqual(
      Array.from({ length: 10 }, (_, i) => pollBackoffMs("http_error", i + 1, 200, undefined, 0.5)),
    );
    expect(waits[2]).toBeGreaterThan(waits[1]!);
    expect(h.blind.count).toBe(10);
    expect(h.stage.stats).toMatchObject({ ok: 0, failed: 10, consecutiveFailures: 10, lastGoodPollMs: null });
    expect(h.stage.stats.lastError).toMatch(/500/);
    expect(h.stage.outcomes.http_error).toBe(10);
    expect(h.stage.lastGoodPollWallMs).toBeNull();
    const warnings = h.logs.filter((l) => l.msg === "IMDS poll failed; no transitions inferred from a failed poll");
    expect(warnings.map((w) => w.consecutiveFailures)).toEqual([1, 10]);
    expect(warnings[0]).toMatchObject({ level: 40, kind: "http_error", status: 500, retryInMs: waits[0] });
    expect(h.stage.lastIncarnation).toBeNull();

    expect(await poll(h)).toBe(200);
    expect(h.logs.at(-1)).toMatchObject({ level: 30, msg: "IMDS polls recovered", afterFailures: 10 });
    expect(h.stage.stats).toMatchObject({ ok: 1, failed: 10, consecutiveFailures: 0, lastError: null });
    expect(await poll(h)).toBe(200);
    expect(messages(h).filter((m) => m === "IMDS polls recovered")).toHaveLength(1);
  });

  it("names each failure's outcome: throttled, bad request (an error log), malformed, HTTP error, network error", async () => {
    const h = harness(
      await imdsPeer([
        json(429, "slow down", { "Retry-After": "3" }),
        json(400, "bad"),
        json(200, "{not json"),
        json(503, "down"),
      ]),
    );
    expect(await poll(h)).toBe(pollBackoffMs("throttled", 1, 200, 3000, 0.5));
    expect(await poll(h)).toBe(pollBackoffMs("bad_request", 2, 200, undefined, 0.5));
    expect(h.logs.at(-1)).toMatchObject({
      level: 50,
      msg: "IMDS rejected the request as malformed (400): check imdsUrl and apiVersion; retrying slowly",
      consecutiveFailures: 2,
    });
    await poll(h);
    await poll(h);
    expect(h.stage.outcomes).toMatchObject({ throttled: 1, bad_request: 1, malformed: 1, http_error: 1 });
    const refused = harness("http://127.0.0.1:9");
    await poll(refused);
    expect(refused.stage.outcomes.network_error).toBe(1);
    expect(messages(h, 40)).toEqual(["IMDS poll failed; no transitions inferred from a failed poll"]);
  });

  it("counts a document it could not commit as a store error and polls again at the interval, not as a poll", async () => {
    const h = harness(await imdsPeer([json(200, documentOf(1))]), {
      ingest: () => {
        throw new Error("database is locked");
      },
    });
    expect(await poll(h)).toBe(200);
    expect(metricValue(await h.metrics.registry.metrics(), "sef_store_errors_total")).toBe(1);
    expect(h.stage.stats).toMatchObject({ ok: 0, failed: 0, consecutiveFailures: 0 });
    expect(h.stage.outcomes).toMatchObject({ ok: 0, unchanged: 0 });
    expect(h.stage.lastIncarnation).toBeNull();
    expect(h.blind.count).toBe(0);
    expect(h.logs.at(-1)).toMatchObject({
      level: 50,
      msg: "could not commit a document to the store; will retry",
      err: { message: "database is locked" },
    });
  });

  it("reports a wall-clock step of 2 s or more between good polls, forward or back, and hands it to the collect stage", async () => {
    const h = harness(await imdsPeer([json(200, documentOf(1))]));
    const steps = async (): Promise<string> => await h.metrics.registry.metrics();
    await poll(h);
    h.clock.stepWall(1999);
    await poll(h);
    h.clock.stepWall(2000);
    await poll(h);
    h.clock.stepWall(-1999);
    await poll(h);
    h.clock.stepWall(-2000);
    await poll(h);
    h.clock.stepWall(-3000);
    await poll(h);
    expect(h.ingested.map((i) => i.clockStepMs)).toEqual([0, 0, 2000, 0, -2000, -3000]);
    const text = await steps();
    expect(metricValue(text, "sef_clock_steps_total", { direction: "forward" })).toBe(1);
    expect(metricValue(text, "sef_clock_steps_total", { direction: "back" })).toBe(2);
    const warned = h.logs.filter((l) => String(l.msg).startsWith("wall clock stepped"));
    expect(warned.map((w) => [w.stepMs, w.direction, w.msg])).toEqual([
      [
        2000,
        "forward",
        "wall clock stepped forward by 2 s; polling, backoff and deadlines use the monotonic clock and are unaffected",
      ],
      [
        -2000,
        "back",
        "wall clock stepped back by 2 s; polling, backoff and deadlines use the monotonic clock and are unaffected",
      ],
      [
        -3000,
        "back",
        "wall clock stepped back by 3 s; polling, backoff and deadlines use the monotonic clock and are unaffected",
      ],
    ]);
  });

  it("warns when IMDS answers slower than twice the interval and over 2 s, not at 2 s", async () => {
    let clock: FakeClock | undefined;
    const late =
      (ms: number): Answer =>
      (req, res) => {
        clock!.jump(ms); // the answer takes this long on the poll's clock
        json(200, documentOf(1))(req, res);
      };
    const h = harness(await imdsPeer([late(2000), late(2001)]));
    clock = h.clock;
    await poll(h);
    expect(messages(h, 40)).toEqual([]);
    await poll(h);
    expect(h.logs.at(-1)).toMatchObject({
      level: 40,
      latencyMs: 2001,
      msg: "IMDS answered slowly (its first call after enabling may take up to 2 minutes)",
    });
    const latencies = await h.metrics.registry.metrics();
    expect(metricValue(latencies, "sef_poll_duration_seconds_count")).toBe(2);
    expect(metricValue(latencies, "sef_poll_duration_seconds_sum")).toBeCloseTo(4.001, 6);
    // With a 1.5 s interval the bar is 3 s.
    const slower = harness(await imdsPeer([late(3000), late(3001)]), {}, "1500");
    clock = slower.clock;
    await poll(slower);
    expect(messages(slower, 40)).toEqual([]);
    await poll(slower);
    expect(slower.logs.at(-1)).toMatchObject({ level: 40, latencyMs: 3001 });
  });

  it("names a poll IMDS does not answer within the request deadline a timeout", async () => {
    const h = harness(await imdsPeer([held([])]), {}, "200", { imdsFirstCallTimeoutMs: 50 });
    expect(await poll(h)).toBe(pollBackoffMs("timeout", 1, 200, undefined, 0.5));
    expect(h.stage.outcomes.timeout).toBe(1);
    expect(h.stage.stats.lastError).toMatch(/within 50 ms$/);
  });

  it("sends nothing once closed: a later poll fails without a request", async () => {
    const h = harness(await imdsPeer([json(200, documentOf(1))]));
    await poll(h);
    await h.stage.close();
    await poll(h);
    expect(received.polls).toBe(1);
    expect(h.stage.outcomes).toMatchObject({ ok: 1, network_error: 1 });
  });

  it("returns at once without counting a failure when stopped while a request is in flight", async () => {
    let arrived = (): void => undefined;
    const inFlight = new Promise<void>((r) => (arrived = r));
    const h = harness(await imdsPeer([() => arrived()])); // never answers
    const polled = poll(h);
    await inFlight;
    h.abort.abort(new Error("stopping"));
    expect(await polled).toBe(0);
    expect(h.stage.stats).toMatchObject({ failed: 0, consecutiveFailures: 0 });
    expect(h.blind.count).toBe(0);
  });
});

describe("PollStage.prepare", () => {
  it("reads the VM identity before the first poll and reports it once, not again while it stays the same", async () => {
    const h = harness(await imdsPeer([json(200, documentOf(1))]));
    await prepare(h);
    expect(h.identities).toHaveLength(1);
    expect(h.stage.vmIdentity).toMatchObject({ VmName: "WestNO_0", VmId: compute.vmId, ResourceGroup: "rg" });
    expect(h.logs.at(-1)).toMatchObject({ msg: "VM identity from instance metadata", vmName: "WestNO_0" });
    await prepare(h);
    expect(h.identities).toHaveLength(1);
  });

  it("waits 5 s at most for instance metadata, and takes its answer when it comes later", async () => {
    const computes: ServerResponse[] = [];
    const h = harness(await imdsPeer([json(200, documentOf(1))], held(computes)));
    let prepared = false;
    const preparing = h.stage.prepare().then(() => (prepared = true));
    await waitFor("the identity request", () => computes.length === 1, soon);
    await h.clock.advance(4999);
    expect(prepared).toBe(false);
    await h.clock.advance(1);
    await waitFor("prepare to give up", () => prepared, soon);
    await preparing;
    expect(h.stage.vmIdentity).toEqual(unknownVm);
    json(200, compute)({} as IncomingMessage, computes[0]!);
    await waitFor("the late identity", () => h.identities.length === 1, soon);
    expect(h.stage.vmIdentity.VmId).toBe(compute.vmId);
  });

  it("keeps the identity it had when instance metadata fails, and warns", async () => {
    const h = harness(await imdsPeer([json(200, documentOf(1))], json(500, "down")));
    await prepare(h);
    expect(h.identities).toEqual([]);
    expect(h.stage.vmIdentity).toEqual(unknownVm);
    expect(h.logs.at(-1)).toMatchObject({
      level: 40,
      msg: "instance metadata unavailable; records keep the last known VM identity; retrying",
      failures: 1,
    });
  });
});

describe("PollStage's loop", () => {
  it("polls every interval on the monotonic clock, reads the identity again after computeRefreshMs, and stops", async () => {
    const h = harness(await imdsPeer([json(200, documentOf(1))]));
    await prepare(h);
    expect(received.computes).toBe(1);
    h.stage.start();
    await waitFor("the first poll", () => h.ingested.length === 1, soon);
    await h.clock.advance(199); // the loop sleeps on the fake clock: no poll can start before the interval is over
    expect(received.polls).toBe(1);
    await h.clock.advance(1);
    await waitFor("the second poll, at the interval", () => h.ingested.length === 2, soon);
    expect(received.computes).toBe(1);
    h.clock.jump(60 * 60 * 1000 - 400); // the third poll 200 ms short of computeRefreshMs since the identity
    await h.clock.advance(0); // wakes the loop (its interval long over): the third poll
    await waitFor("the third poll", () => h.ingested.length === 3, soon);
    expect(received.computes).toBe(1); // short of the hour
    await h.clock.advance(200); // the fourth poll, exactly an hour after the identity was read: it reads it again
    await waitFor("the identity read again", () => received.computes === 2, soon);
    await waitFor("the fourth poll", () => h.ingested.length === 4, soon);
    expect(h.identities).toHaveLength(1); // the same VM: nothing to persist
    let stopped = false;
    const stopping = h.stage.stopped().then(() => (stopped = true));
    await flushAsync();
    expect(stopped).toBe(false); // the loop runs (asleep on the clock) until the stop
    h.abort.abort(new Error("stopping"));
    await stopping;
    const polls = received.polls;
    await h.clock.advance(10_000);
    expect(received.polls).toBe(polls);
  });

  it("while the identity is unknown, reads it again after a short backoff rather than the hour", async () => {
    let computeOk = false;
    const h = harness(
      await imdsPeer([json(200, documentOf(1))], (req, res) =>
        computeOk ? json(200, compute)(req, res) : json(500, "down")(req, res),
      ),
    );
    await prepare(h);
    expect(h.stage.vmIdentity.VmId).toBe("");
    h.stage.start();
    await waitFor("the first poll", () => h.ingested.length === 1, soon);
    computeOk = true;
    await h.clock.advance(1000); // under the backoff after one failure (2 s, jitter 0.5: 1.5 s): not yet
    await waitFor("the next poll", () => h.ingested.length >= 2, soon);
    expect(received.computes).toBe(1);
    await h.clock.advance(2000);
    await waitFor("the identity read again", () => h.identities.length === 1, soon);
    expect(h.stage.vmIdentity.VmId).toBe(compute.vmId);
    h.abort.abort(new Error("stopping"));
    await h.stage.stopped();
  });

  it("reads the identity again a second after an answer without a vmId, not after the hour", async () => {
    const h = harness(await imdsPeer([json(200, documentOf(1))], json(200, { ...compute, vmId: "" })), {}, "500");
    await prepare(h);
    expect(h.stage.vmIdentity).toMatchObject({ VmName: "WestNO_0", VmId: "" });
    h.stage.start();
    await waitFor("the first poll", () => h.ingested.length === 1, soon);
    await h.clock.advance(500);
    await waitFor("the second poll", () => h.ingested.length === 2, soon);
    expect(received.computes).toBe(1);
    await h.clock.advance(500); // a second after the identity was read
    await waitFor("the identity read again", () => received.computes === 2, soon);
    h.abort.abort(new Error("stopping"));
    await h.stage.stopped();
  });

  it("counts the interval from when a poll the rate limit held really went out", async () => {
    const h = harness(await imdsPeer([json(200, documentOf(1))]));
    const t0 = h.clock.monotonicMs();
    const asleep = () => h.clock.pendingSleeps === 1 && h.ingested.length === received.polls;
    h.stage.start(); // its first turn reads the identity too: two of the five requests a second IMDS allows
    await waitFor("the first poll", () => asleep() && h.ingested.length === 1, soon);
    const starts: number[] = [];
    for (let i = 0; i < 6; i++) {
      await h.clock.advance(200);
      await waitFor("the loop asleep", asleep, soon);
      starts.push(h.stage.imds.lastRequestStartedMs! - t0);
    }
    // The poll due at 800 waits for the rate limit until 1000; the next comes an interval after that.
    expect(starts).toEqual([200, 400, 600, 600, 1000, 1200]);
    expect(received.polls).toBe(6); // none in between
    h.abort.abort(new Error("stopping"));
    await h.stage.stopped();
  });

  it("reads the identity once at a time, and says nothing of a read the stop cut off", async () => {
    const computes: ServerResponse[] = [];
    const h = harness(await imdsPeer([json(200, documentOf(1))], held(computes)));
    h.stage.start(); // its first turn reads the identity
    await waitFor("the identity request", () => computes.length === 1, soon);
    for (let polls = 2; polls <= 4; polls++) {
      h.clock.jump(60_000); // far past any wait before the next read
      await h.clock.advance(0); // wakes the loop once
      await waitFor(`poll ${polls}`, () => h.ingested.length === polls, soon);
    }
    expect(received.computes).toBe(1);
    h.abort.abort(new Error("stopping"));
    await h.stage.stopped();
    await waitFor("the read cut off", () => computes[0]!.closed, soon);
    await flushAsync();
    expect(messages(h, 40)).toEqual([]);
  });

  it("while instance metadata keeps failing, warns of the 1st failure and every 10th only", async () => {
    const h = harness(await imdsPeer([json(200, documentOf(1))], json(500, "down")));
    const warned = () =>
      h.logs
        .filter((l) => l.msg === "instance metadata unavailable; records keep the last known VM identity; retrying")
        .map((l) => l.failures);
    h.stage.start();
    for (let turn = 1; warned().length < 2 && turn <= 40; turn++) {
      await waitFor(`turn ${turn}`, () => h.ingested.length === turn, soon);
      h.clock.jump(60_000); // past the longest wait before the next read (30 s)
      await h.clock.advance(0); // wakes the loop once
    }
    expect(warned()).toEqual([1, 10]);
    expect(received.computes).toBe(10);
    h.abort.abort(new Error("stopping"));
    await h.stage.stopped();
  });

  it("logs a loop that fails as fatal, and stopped() still resolves", async () => {
    const h = harness(await imdsPeer([json(500, "down")]), {
      onBlind: () => {
        throw new Error("onBlind broke");
      },
    });
    h.stage.start();
    await h.stage.stopped();
    expect(h.logs.find((l) => l.msg === "poll loop failed")).toMatchObject({
      level: 60,
      err: { message: "onBlind broke" },
    });
  });
});
