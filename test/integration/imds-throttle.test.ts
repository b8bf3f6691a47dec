// The built agent against a throttling IMDS: after a 429 with Retry-After it waits at least that long before polling
// again (the poll loop is the only retry owner: one request per poll), and after a 400 it says the request is malformed
// and waits 30–60 s — measured as the spacing of requests at the simulator.
import { afterEach, describe, expect, it } from "vitest";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseScenario } from "../../src/testbed/simulator/scenario-schema.js";
import { startSimulator, type Simulator } from "../../src/testbed/simulator/server.js";
import { badRequestRetryMs } from "../../src/agent/pipeline/poll-backoff.js";
import { logLines, runCli, type RunningProcess } from "../helpers/agent-process.js";
import { waitFor } from "../helpers/wait.js";

const eventsPath = "/metadata/scheduledevents";
const pollIntervalMs = 200;
const running: Array<{ agent: RunningProcess; sim: Simulator }> = [];
afterEach(async () => {
  for (const { agent, sim } of running.splice(0)) {
    await agent.stop("SIGKILL");
    await sim.close();
  }
});

/** The built agent against a simulator serving `fault` from 1 s on (or the `faults` steps: scenario seconds → fault). */
async function agentAgainst(fault: Record<string, unknown>, options: { faults?: Record<number, Record<string, unknown>>; pollIntervalMs?: number } = {}): Promise<{ agent: RunningProcess; sim: Simulator }> {
  const steps = Object.entries(options.faults ?? { 1: fault }).map(([at, f]) => ({ at: Number(at), fault: f }));
  const scenario = parseScenario({ name: "throttle", description: "faults", durationSeconds: 3600, steps: [{ at: 0, events: [] }, ...steps] }, "test");
  const sim = await startSimulator({ scenario, speed: 1 });
  const dir = mkdtempSync(join(tmpdir(), "sef-throttle-"));
  const interval = options.pollIntervalMs ?? pollIntervalMs;
  const agent = runCli(
    ["run", "--imds-url", sim.url, "--poll-interval-ms", String(interval), "--data-dir", join(dir, "data"), "--sink", `jsonl:${join(dir, "r.jsonl")}`, "--heartbeat-interval-ms", "0"],
    { env: { SEF_METRICS_PORT: "0" } },
  );
  running.push({ agent, sim });
  return { agent, sim };
}

describe("IMDS throttling", () => {
  it("after a 429 with Retry-After: 2 the next poll waits 2 s; then polling resumes at the interval", async () => {
    const retryAfterMs = 2000;
    const { sim } = await agentAgainst({ kind: "status", status: 429, forSeconds: 8, retryAfterSeconds: retryAfterMs / 1000 });
    const throttled = () => sim.requestLog(eventsPath).filter((r) => r.status === "429");
    // Two polls' worth of throttled requests, then one answered after the fault.
    await waitFor("throttled polls, then an answer", () => {
      const log = sim.requestLog(eventsPath);
      const lastThrottled = log.findLastIndex((r) => r.status === "429");
      return throttled().length >= 3 && log.slice(lastThrottled + 1).filter((r) => r.status === "200" || r.status === "304").length >= 3; // 304: a conditional poll answered
    }, { timeoutMs: 20_000, detail: () => JSON.stringify(sim.requestLog(eventsPath)) });
    // A poll is one request, and the next poll comes at least Retry-After later: any two throttled requests in a row are
    // that far apart (exponential backoff from 200 ms, or a retry inside the IMDS client, would send them sooner).
    const times = throttled().map((r) => r.atMs);
    for (let i = 0; i + 1 < times.length; i++) {
      expect(times[i + 1]! - times[i]!, `requests ${i}..${i + 1} of ${JSON.stringify(times)}`).toBeGreaterThanOrEqual(retryAfterMs - 5);
    }
    // Once answered again, polls come at the interval (not at a leftover backoff).
    const log = sim.requestLog(eventsPath);
    const answered = log.slice(log.findLastIndex((r) => r.status === "429") + 1).map((r) => r.atMs);
    expect(answered[2]! - answered[0]!).toBeLessThan(retryAfterMs);
  }, 40_000);

  it("after a 400 it logs a malformed request and waits 30–60 s before the next poll", async () => {
    const { agent, sim } = await agentAgainst({ kind: "status", status: 400, forSeconds: 3600 });
    const line = await waitFor("the 400 log line", () => logLines(agent.stderr()).find((l) => /rejected the request as malformed \(400\)/.test(String(l.msg))), {
      detail: () => agent.stderr().slice(-2000),
    });
    expect(line).toMatchObject({ kind: "bad_request", status: 400 });
    expect(line!.retryInMs).toBeGreaterThanOrEqual(badRequestRetryMs / 2);
    expect(line!.retryInMs).toBeLessThanOrEqual(badRequestRetryMs);
    // The decision is in the log; the wire agrees: one request (a 400 is not retried at once), then silence for the
    // next 2 s — ten poll intervals in which a poll at the interval would have been seen.
    const rejectedAtMs = sim.requestLog(eventsPath).find((r) => r.status === "400")!.atMs;
    await waitFor("2 s after the 400", () => Date.now() - rejectedAtMs >= 2000, { timeoutMs: 5000 });
    expect(sim.requestLog(eventsPath).filter((r) => r.atMs >= rejectedAtMs).map((r) => r.status)).toEqual(["400"]);
  }, 30_000);

  it("under persistent 5xx the polls back off, doubling from the interval; after a recovery polling is back at the interval, and the next outage backs off from the interval again", async () => {
    // Each failed poll is 3 requests (the client's 2 immediate retries): 12 answers of 500 are 4 failed polls, and
    // 6 more, well after the recovery, 2 more.
    const interval = 500;
    const { sim } = await agentAgainst({}, { pollIntervalMs: interval, faults: { 1: { kind: "status", status: 500, count: 12 }, 16: { kind: "status", status: 500, count: 6 } } });
    const log = () => sim.requestLog(eventsPath);
    await waitFor("two outages, each followed by answered polls", () => {
      const statuses = log().map((r) => (r.status === "500" ? "5" : "."));
      return /^\.*5{12}\.{3,}5{6}\.{2,}/.test(statuses.join(""));
    }, { timeoutMs: 45_000, detail: () => JSON.stringify(log()) });
    const entries = log();
    const firstFailure = entries.findIndex((r) => r.status === "500");
    const outage1 = entries.slice(firstFailure, firstFailure + 12);
    const afterRecovery = entries.slice(firstFailure + 12, firstFailure + 15);
    const outage2Start = entries.findIndex((r, i) => i > firstFailure + 12 && r.status === "500");
    const outage2 = entries.slice(outage2Start, outage2Start + 6);
    const polls = (requests: typeof entries) => Array.from({ length: requests.length / 3 }, (_, k) => requests.slice(3 * k, 3 * k + 3));
    // The wait after a failed poll runs from its last request: interval × 1, 2, 4 (not sooner: timers never fire early).
    const gaps = (requests: typeof entries) => polls(requests).slice(1).map((poll, k) => poll[0]!.atMs - polls(requests)[k]![2]!.atMs);
    const detail = JSON.stringify(entries.slice(firstFailure));
    const [g1, g2, g3] = gaps(outage1);
    expect(g1, detail).toBeGreaterThanOrEqual(interval - 20);
    expect(g2, detail).toBeGreaterThanOrEqual(2 * interval - 20);
    expect(g3, detail).toBeGreaterThanOrEqual(4 * interval - 20);
    // Answered again: the polls come at the interval (not at the last backoff)…
    expect(afterRecovery.map((r) => r.status).every((st) => st === "200" || st === "304"), detail).toBe(true);
    expect(afterRecovery[2]!.atMs - afterRecovery[0]!.atMs, detail).toBeLessThan(2 * 4 * interval);
    // …and the next outage backs off from the interval again: its second poll comes an interval after its first, not
    // after the 16 intervals five failures in a row would wait.
    const [h1] = gaps(outage2);
    expect(h1, detail).toBeGreaterThanOrEqual(interval - 20);
    expect(h1, detail).toBeLessThan(8 * interval);
  }, 60_000);
});
