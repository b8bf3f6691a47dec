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

async function agentAgainst(fault: Record<string, unknown>): Promise<{ agent: RunningProcess; sim: Simulator }> {
  const scenario = parseScenario(
    { name: "throttle", description: "a fault from 1 s on", durationSeconds: 3600, steps: [{ at: 0, events: [] }, { at: 1, fault }] },
    "test",
  );
  const sim = await startSimulator({ scenario, speed: 1 });
  const dir = mkdtempSync(join(tmpdir(), "sef-throttle-"));
  const agent = runCli(
    ["run", "--imds-url", sim.url, "--poll-interval-ms", String(pollIntervalMs), "--data-dir", join(dir, "data"), "--sink", `jsonl:${join(dir, "r.jsonl")}`, "--heartbeat-interval-ms", "0"],
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
});
