// Crash safety of the built agent: kill -9 at random moments, restart, and check that nothing committed is lost,
// nothing is recorded twice, and what ended while the agent was down carries ObservationGap.
import { describe, expect, it } from "vitest";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { startSimulator } from "../../src/testbed/simulator/server.js";
import { parseScenario } from "../../src/testbed/simulator/scenario-schema.js";
import { runCli, readJsonl, waitUntil, type RunningProcess } from "../helpers/agent-process.js";
import { replayable, testRuns, testSeed } from "../helpers/seed.js";
import type { TransitionRecord } from "../../src/contract/record.js";
import { waitForMorePolls } from "../helpers/polls.js";

function agentArgs(imdsUrl: string, dir: string): string[] {
  return [
    "run",
    "--imds-url",
    imdsUrl,
    "--poll-interval-ms",
    "200",
    "--data-dir",
    join(dir, "data"),
    "--sink",
    `jsonl:${join(dir, "records.jsonl")}`,
    "--heartbeat-interval-ms",
    "0",
    "--metrics-port",
    "0",
  ];
}

/** Ten overlapping events, each Scheduled → Started → gone, over about 7 s at speed 60. */
function busyScenario() {
  const steps: Array<{ at: number; events: Array<Record<string, unknown>> }> = [];
  const lifetimes = Array.from({ length: 10 }, (_, i) => ({
    id: `C0FFEE00-0000-4000-8000-00000000000${i}`,
    scheduledAt: 20 + i * 30,
    startedAt: 80 + i * 30,
    goneAt: 140 + i * 30,
  }));
  const times = [...new Set(lifetimes.flatMap((l) => [l.scheduledAt, l.startedAt, l.goneAt]))].sort((a, b) => a - b);
  for (const at of times) {
    const events = lifetimes
      .filter((l) => l.scheduledAt <= at && at < l.goneAt)
      .map((l) => ({
        EventId: l.id,
        EventType: "Reboot",
        Resources: ["WestNO_0"],
        EventStatus: at >= l.startedAt ? "Started" : "Scheduled",
        notBeforeInSeconds: 600,
        autoStart: false,
      }));
    steps.push({ at, events });
  }
  return parseScenario(
    {
      name: "crash-test",
      description: "overlapping events for kill -9 tests",
      speed: 60,
      durationSeconds: 460,
      vm: { name: "WestNO_0" },
      steps,
      expect: [],
    },
    "crash-test",
  );
}

/** `EventId:Status` pairs the agent logged as committed to its store. */
function committedPairs(logs: string): Set<string> {
  const pairs = new Set<string>();
  for (const line of logs.split("\n")) {
    if (!line.includes("transitions recorded")) continue;
    for (const pair of (JSON.parse(line) as { records: string[] }).records) pairs.add(pair.toLowerCase());
  }
  return pairs;
}

describe("crash and restart", () => {
  it("loses nothing and never records a transition twice across random kill -9", async () => {
    const seed = testSeed(4242);
    const killDelaysMs = fc.sample(fc.integer({ min: 150, max: 1200 }), { numRuns: testRuns(6), seed });
    await replayable(seed, async () => {
      const sim = await startSimulator({ scenario: busyScenario() });
      const dir = mkdtempSync(join(tmpdir(), "sef-crash-"));
      let logs = "";
      let agent: RunningProcess | undefined;
      try {
        for (const delayMs of killDelaysMs) {
          agent = runCli(agentArgs(sim.url, dir));
          await new Promise((r) => setTimeout(r, delayMs));
          await agent.stop("SIGKILL");
          logs += agent.stderr();
        }
        agent = runCli(agentArgs(sim.url, dir));
        await sim.waitForEnd();
        await waitForMorePolls(sim, 3, { detail: () => agent!.stderr().slice(-2000) });
        expect(await agent.stop("SIGTERM")).toBe(0);
        logs += agent.stderr();
      } finally {
        await agent?.stop("SIGKILL");
        await sim.close();
      }

      const records = readJsonl<TransitionRecord>(join(dir, "records.jsonl"));
      const byPair = new Map<string, TransitionRecord[]>();
      for (const r of records)
        byPair.set(`${r.EventId}:${r.EventStatus}`.toLowerCase(), [
          ...(byPair.get(`${r.EventId}:${r.EventStatus}`.toLowerCase()) ?? []),
          r,
        ]);
      // A record may reach the sink again after a crash, but only as the very same record.
      for (const [pair, copies] of byPair) {
        expect(new Set(copies.map((c) => JSON.stringify(c))).size, pair).toBe(1);
      }
      // Everything the agent committed reached the sink.
      const committed = committedPairs(logs);
      expect(committed.size).toBeGreaterThan(0);
      for (const pair of committed) expect(byPair.has(pair), `${pair} was committed but never delivered`).toBe(true);
      // Every event the agent saw at all (one may live and end entirely between two crashes) was seen to its end exactly once.
      let seen = 0;
      for (let i = 0; i < 10; i++) {
        const id = `c0ffee00-0000-4000-8000-00000000000${i}`;
        const pairs = [...byPair.keys()].filter((k) => k.startsWith(id));
        if (pairs.length === 0) continue;
        seen += 1;
        expect(
          pairs.filter((k) => k.endsWith(":completed") || k.endsWith(":canceled")),
          id,
        ).toHaveLength(1);
      }
      expect(seen).toBeGreaterThanOrEqual(5);
    });
  }, 60_000);

  it("reports an event that ended while the agent was down with ObservationGap", async () => {
    const sim = await startSimulator({ scenario: "idle" });
    const dir = mkdtempSync(join(tmpdir(), "sef-gap-"));
    const out = join(dir, "records.jsonl");
    const ran = "0A0A0A0A-0000-4000-8000-000000000001";
    const cancelled = "0A0A0A0A-0000-4000-8000-000000000002";
    let agent = runCli(agentArgs(sim.url, dir));
    try {
      sim.setEvents([
        { EventId: ran, EventType: "Reboot", Resources: ["WestNO_0"], notBeforeInSeconds: 0, autoStart: false },
        { EventId: cancelled, EventType: "Redeploy", Resources: ["WestNO_0"], notBeforeInSeconds: 86_400 },
      ]);
      await waitUntil(() => readJsonl(out).length === 2, 15_000, "two Scheduled records");
      await agent.stop("SIGKILL");
      sim.setEvents([{ EventId: ran, EventStatus: "Started" }, { EventId: cancelled }]);
      sim.setEvents([]);
      agent = runCli(agentArgs(sim.url, dir));
      // The kill may land after the Scheduled lines were written but before the ledger settled them: the restarted
      // agent then sends them again with the same RecordIds (an in-doubt repeat). Count distinct records.
      const distinct = () => new Map(readJsonl<TransitionRecord>(out).map((r) => [r.RecordId, r]));
      await waitUntil(() => distinct().size === 4, 15_000, "two ending records");
      expect(await agent.stop("SIGTERM")).toBe(0);
    } finally {
      await agent.stop("SIGKILL");
      await sim.close();
    }
    const records = readJsonl<TransitionRecord>(out);
    expect(new Set(records.map((r) => r.RecordId)).size).toBe(4);
    const endings = [...new Map(records.map((r) => [r.RecordId, r])).values()].filter(
      (r) => r.EventStatus !== "Scheduled",
    );
    expect(endings.map((r) => [r.EventId, r.PreviousStatus, r.EventStatus, r.ObservationGap]).sort()).toEqual(
      [
        [ran, "Scheduled", "Completed", true],
        [cancelled, "Scheduled", "Canceled", true],
      ].sort(),
    );
  }, 60_000);
});
