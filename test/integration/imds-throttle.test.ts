// The built agent against a throttling IMDS: after a 429 with Retry-After it waits at least that long before polling
// again (the poll loop is the only retry owner: one request per poll), and after a 400 it says the request is malformed
// and waits 30–60 s; under persistent 5xx the waits grow with each failed poll, and after a recovery they start from the
// interval again — measured as the spacing of requests at the simulator.
import { afterEach, describe, expect, it } from "vitest";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseScenario } from "../../src/testbed/simulator/scenario-schema.js";
import { startSimulator, type Simulator } from "../../src/testbed/simulator/server.js";
import { badRequestRetryMs, pollRetryPolicy } from "../../src/agent/pipeline/poll-backoff.js";
import { retryDelayMs } from "../../src/retry/policy.js";
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
async function agentAgainst(
  fault: Record<string, unknown>,
  options: { faults?: Record<number, Record<string, unknown>>; pollIntervalMs?: number } = {},
): Promise<{ agent: RunningProcess; sim: Simulator }> {
  const steps = Object.entries(options.faults ?? { 1: fault }).map(([at, f]) => ({ at: Number(at), fault: f }));
  const scenario = parseScenario(
    { name: "throttle", description: "faults", durationSeconds: 3600, steps: [{ at: 0, events: [] }, ...steps] },
    "test",
  );
  const sim = await startSimulator({ scenario, speed: 1 });
  const dir = mkdtempSync(join(tmpdir(), "sef-throttle-"));
  const interval = options.pollIntervalMs ?? pollIntervalMs;
  const agent = runCli(
    [
      "run",
      "--imds-url",
      sim.url,
      "--poll-interval-ms",
      String(interval),
      "--data-dir",
      join(dir, "data"),
      "--sink",
      `jsonl:${join(dir, "r.jsonl")}`,
      "--heartbeat-interval-ms",
      "0",
    ],
    { env: { SEF_METRICS_PORT: "0" } },
  );
  running.push({ agent, sim });
  return { agent, sim };
}

describe("IMDS throttling", () => {
  it("after a 429 with Retry-After: 2 the next poll waits 2 s; then polling resumes at the interval", async () => {
    const retryAfterMs = 2000;
    const { sim } = await agentAgainst({
      kind: "status",
      status: 429,
      forSeconds: 8,
      retryAfterSeconds: retryAfterMs / 1000,
    });
    const throttled = () => sim.requestLog(eventsPath).filter((r) => r.status === "429");
    // Two polls' worth of throttled requests, then one answered after the fault.
    await waitFor(
      "throttled polls, then an answer",
      () => {
        const log = sim.requestLog(eventsPath);
        const lastThrottled = log.findLastIndex((r) => r.status === "429");
        return (
          throttled().length >= 3 &&
          log.slice(lastThrottled + 1).filter((r) => r.status === "200" || r.status === "304").length >= 3
        ); // 304: a conditional poll answered
      },
      { timeoutMs: 20_000, detail: () => JSON.stringify(sim.requestLog(eventsPath)) },
    );
    // A poll is one request, and the next poll comes at least Retry-After later: any two throttled requests in a row are
    // that far apart (exponential backoff from 200 ms, or a retry inside the IMDS client, would send them sooner).
    const times = throttled().map((r) => r.atMs);
    for (let i = 0; i + 1 < times.length; i++) {
      expect(times[i + 1]! - times[i]!, `requests ${i}..${i + 1} of ${JSON.stringify(times)}`).toBeGreaterThanOrEqual(
        retryAfterMs - 5,
      );
    }
    // Once answered again, polls come at the interval (not at a leftover backoff): two answered polls come sooner than
    // one throttled poll after another did (both spans as the simulator saw them, so a loaded machine stretches both).
    const log = sim.requestLog(eventsPath);
    const answered = log.slice(log.findLastIndex((r) => r.status === "429") + 1).map((r) => r.atMs);
    const throttledGaps = times.slice(1).map((t, i) => t - times[i]!);
    expect(answered[2]! - answered[0]!, JSON.stringify(log)).toBeLessThan(Math.min(...throttledGaps));
  }, 40_000);

  it("after a 400 it logs a malformed request and waits 30–60 s before the next poll", async () => {
    const { agent, sim } = await agentAgainst({ kind: "status", status: 400, forSeconds: 3600 });
    const line = await waitFor(
      "the 400 log line",
      () => logLines(agent.stderr()).find((l) => /rejected the request as malformed \(400\)/.test(String(l.msg))),
      {
        detail: () => agent.stderr().slice(-2000),
      },
    );
    expect(line).toMatchObject({ kind: "bad_request", status: 400 });
    expect(line!.retryInMs).toBeGreaterThanOrEqual(badRequestRetryMs / 2);
    expect(line!.retryInMs).toBeLessThanOrEqual(badRequestRetryMs);
    // The decision is in the log; the wire agrees: one request (a 400 is not retried at once), then silence for the
    // next 2 s — ten poll intervals in which a poll at the interval would have been seen.
    const rejectedAtMs = sim.requestLog(eventsPath).find((r) => r.status === "400")!.atMs;
    await waitFor("2 s after the 400", () => Date.now() - rejectedAtMs >= 2000, { timeoutMs: 5000 });
    expect(
      sim
        .requestLog(eventsPath)
        .filter((r) => r.atMs >= rejectedAtMs)
        .map((r) => r.status),
    ).toEqual(["400"]);
  }, 30_000);

  it("under persistent 5xx the polls back off from the interval, growing with each failure; after a recovery polling is back at the interval, and the next outage backs off from the interval again", async () => {
    // One request per poll (the IMDS client sends each once). 5 answers of 500 from second 1 are 5 failed polls in a
    // row; 3 more from second 14, after several answered polls.
    const interval = 500;
    const { agent, sim } = await agentAgainst(
      {},
      {
        pollIntervalMs: interval,
        faults: { 1: { kind: "status", status: 500, count: 5 }, 14: { kind: "status", status: 500, count: 3 } },
      },
    );
    const log = () => sim.requestLog(eventsPath);
    await waitFor(
      "two outages, each followed by answered polls",
      () =>
        /^\.*5{5}\.{3,}5{3}\.{2,}/.test(
          log()
            .map((r) => (r.status === "500" ? "5" : "."))
            .join(""),
        ),
      {
        timeoutMs: 45_000,
        detail: () => JSON.stringify(log()),
      },
    );
    const entries = log();
    const detail = JSON.stringify(entries);
    const firstFailure = entries.findIndex((r) => r.status === "500");
    const outage2Start = entries.findIndex((r, i) => i > firstFailure + 5 && r.status === "500");
    // The spacing of requests: the wait after the request at index i (timers never fire early; 20 ms for the socket).
    const gapAfter = (i: number) => entries[i + 1]!.atMs - entries[i]!.atMs;
    // The wait after the k-th failed poll in a row: from half to all of interval × 1.5^(k-1) (equal jitter).
    const policy = pollRetryPolicy("http_error", interval);
    const shortest = (k: number) => retryDelayMs(policy, k, undefined, 0);
    const longest = (k: number) => retryDelayMs(policy, k, undefined, 1);
    // Escalation: after the 3rd and 4th failures the shortest possible wait is already longer than the longest wait
    // after a first failure (a count that never grows would never wait that long).
    expect(shortest(4)).toBeGreaterThan(longest(1) + 200);
    for (const k of [1, 2, 3, 4])
      expect(gapAfter(firstFailure + k - 1), `after failure ${k}: ${detail}`).toBeGreaterThanOrEqual(shortest(k) - 20);
    // Answered again: the polls come at the interval, not at the last backoff (shorter than the wait the simulator saw
    // after the 5th failure: spans measured alike, so a loaded machine stretches both).
    for (const i of [firstFailure + 5, firstFailure + 6]) {
      expect(["200", "304"], detail).toContain(entries[i]!.status);
      expect(gapAfter(i), detail).toBeGreaterThanOrEqual(interval - 20);
      expect(gapAfter(i), detail).toBeLessThan(gapAfter(firstFailure + 4));
    }
    // The next outage starts from the interval again. The agent's own word for the waits it chose (no wall clock): it
    // recovered after 5 failures, and the next failure is a first one whose wait is a first failure's, far under what
    // the 6th failure in a row would wait; the simulator saw that wait kept.
    const recoveries = () => logLines(agent.stderr()).filter((l) => l.msg === "IMDS polls recovered");
    await waitFor("the agent's word on both recoveries", () => recoveries().length === 2, {
      detail: () => agent.stderr().slice(-2000),
    });
    expect(recoveries().map((l) => l.afterFailures)).toEqual([5, 3]);
    const lines = logLines(agent.stderr());
    const failed = lines.filter((l) => l.msg === "IMDS poll failed; no transitions inferred from a failed poll");
    expect(failed.map((l) => l.consecutiveFailures)).toEqual([1, 1]);
    const secondOutageWaitMs = failed[1]!.retryInMs as number;
    expect(secondOutageWaitMs).toBeGreaterThanOrEqual(shortest(1));
    expect(secondOutageWaitMs).toBeLessThanOrEqual(longest(1));
    expect(longest(1)).toBeLessThan(shortest(6));
    expect(gapAfter(outage2Start), detail).toBeGreaterThanOrEqual(secondOutageWaitMs - 20);
  }, 60_000);
});
