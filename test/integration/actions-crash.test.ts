// kill -9 of the built agent while a hook runs and while an approval POST is in flight, then a restart: the
// documented behaviour (one POST per event, interrupted hooks reported once, finished hooks not run again).
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { mkdtempSync, readFileSync, existsSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startSimulator, type Simulator } from "../../src/testbed/simulator/server.js";
import { runCli, readJsonl, waitForMetricsUrl, waitUntil, type RunningProcess } from "../helpers/agent-process.js";
import { propertyParams } from "../helpers/seed.js";
import { ledgersSettled } from "../helpers/ledger-probe.js";
import type { HookRecord, ApprovalRecord, SefRecord } from "../../src/contract/record.js";

interface AgentSetup {
  start(): RunningProcess;
  records(): SefRecord[];
  readonly dataDir: string;
}

function agentSetup(sim: Simulator, config: Record<string, unknown>): AgentSetup {
  const dir = mkdtempSync(join(tmpdir(), "sef-actions-crash-"));
  const out = join(dir, "records.jsonl");
  const configPath = join(dir, "config.json");
  writeFileSync(
    configPath,
    JSON.stringify({
      imdsUrl: sim.url,
      pollIntervalMs: 200,
      dataDir: join(dir, "data"),
      sinks: [`jsonl:${out}`],
      heartbeatIntervalMs: 0,
      metricsPort: 0,
      ...config,
    }),
  );
  return {
    start: () => runCli(["run", "--config", configPath]),
    records: () => readJsonl<SefRecord>(out),
    dataDir: join(dir, "data"),
  };
}

const rebootEvent = (id: string) => ({
  EventId: id,
  EventType: "Reboot",
  EventSource: "Platform",
  Resources: ["WestNO_0"],
  notBeforeInSeconds: 900,
  autoStart: false,
});

const hooksOf = (records: SefRecord[]) => records.filter((r): r is HookRecord => r.RecordType === "Hook");
const approvalsOf = (records: SefRecord[]) => records.filter((r): r is ApprovalRecord => r.RecordType === "Approval");
const uniqueIds = (records: SefRecord[]) => [...new Set(records.map((r) => r.RecordId))];

/** Kills a hook's process group left behind by the killed agent (hooks run in their own group). */
function killGroup(pid: number): void {
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // already gone
  }
}

describe.concurrent("actions across kill -9", () => {
  it("an approval POST in flight at kill -9 is reported Interrupted and never sent again, though the event is still Scheduled", async () => {
    const sim = await startSimulator({ scenario: "idle", approvalDelayMs: 6000 });
    const setup = agentSetup(sim, { approval: { mode: "on", rules: [{ eventType: ["Reboot"] }] } });
    const id = "EEEE0000-0000-4000-8000-000000000001";
    const first = setup.start();
    let second: RunningProcess | undefined;
    try {
      sim.setEvents([rebootEvent(id)]);
      await waitUntil(() => sim.status().approvalsHeld === 1, 15_000, "the approval POST to be in flight");
      expect(await first.stop("SIGKILL")).toBe("SIGKILL");
      expect(sim.status().document.Events[0]).toMatchObject({ EventStatus: "Scheduled" });
      second = setup.start();
      await waitUntil(
        () => approvalsOf(setup.records()).some((r) => r.Outcome === "Interrupted"),
        15_000,
        "the Interrupted approval record",
      );
      // The held POST is applied later (IMDS had taken it): the restarted agent sees the event start, with no new POST.
      await waitUntil(
        () => setup.records().some((r) => r.RecordType === "Transition" && r.EventStatus === "Started"),
        20_000,
        "the event to start",
      );
      expect(await second.stop("SIGTERM")).toBe(0);
      expect(sim.status().approvalsHeld).toBe(0); // no second POST waiting either
    } finally {
      await first.stop("SIGKILL");
      await second?.stop("SIGKILL");
      await sim.close();
    }
    expect(sim.status().approvals.map((a) => [a.EventId, a.count])).toEqual([[id, 1]]);
    const approvals = approvalsOf(setup.records());
    expect(approvals).toHaveLength(1);
    expect(approvals[0]).toMatchObject({ EventId: id, Outcome: "Interrupted", HttpStatus: 0 });
    expect(approvals[0]!.Detail).toContain("not sent again");
  }, 60_000);

  for (const onInterrupted of ["skip", "rerun"] as const) {
    it(`a hook running at kill -9 is reported Interrupted once and ${onInterrupted === "skip" ? "not run again" : "run again"} (onInterrupted: ${onInterrupted}); a finished hook is not run again`, async () => {
      const sim = await startSimulator({ scenario: "idle" });
      const dir = mkdtempSync(join(tmpdir(), "sef-hook-crash-"));
      const runs = join(dir, "runs.log");
      // The first run of "slow" sleeps (the agent is killed meanwhile); a later run finishes at once.
      const slowScript = `const fs=require("fs");const f=${JSON.stringify(runs)};const before=fs.existsSync(f)?fs.readFileSync(f,"utf8"):"";fs.appendFileSync(f,"slow "+process.pid+"\\n");if(!before.includes("slow"))setTimeout(()=>{},60000);`;
      const quickScript = `require("fs").appendFileSync(${JSON.stringify(runs)},"quick\\n")`;
      const hooks = [
        { name: "missing", on: ["Scheduled"], command: [join(dir, "no-such-hook")] },
        { name: "quick", on: ["Scheduled"], command: [process.execPath, "-e", quickScript] },
        {
          name: "slow",
          on: ["Scheduled"],
          command: [process.execPath, "-e", slowScript],
          timeoutMs: 120_000,
          onInterrupted,
        },
      ];
      const setup = agentSetup(sim, { hooks });
      const id = "FFFF0000-0000-4000-8000-000000000001";
      const slowPids = (): number[] =>
        existsSync(runs)
          ? readFileSync(runs, "utf8")
              .split("\n")
              .filter((l) => l.startsWith("slow "))
              .map((l) => Number(l.slice(5)))
          : [];
      const first = setup.start();
      let second: RunningProcess | undefined;
      try {
        sim.setEvents([rebootEvent(id)]);
        await waitUntil(() => slowPids().length === 1, 15_000, "the slow hook to run");
        expect(await first.stop("SIGKILL")).toBe("SIGKILL");
        second = setup.start();
        await waitUntil(
          () => hooksOf(setup.records()).some((r) => r.Outcome === "Interrupted"),
          15_000,
          "the Interrupted hook record",
        );
        if (onInterrupted === "rerun")
          await waitUntil(
            () => hooksOf(setup.records()).some((r) => r.Outcome === "Succeeded" && r.Detail.startsWith("slow:")),
            15_000,
            "the re-run",
          );
        // Both ledgers settled: a wrong re-run would be a pending or running action, or its record on its way.
        await waitUntil(
          () => ledgersSettled(setup.dataDir),
          15_000,
          "the restarted agent to settle its actions and deliveries",
        );
        expect(await second.stop("SIGTERM")).toBe(0);
      } finally {
        await first.stop("SIGKILL");
        await second?.stop("SIGKILL");
        for (const pid of slowPids()) killGroup(pid);
        await sim.close();
      }
      const lines = readFileSync(runs, "utf8").trim().split("\n");
      expect(lines.filter((l) => l === "quick")).toHaveLength(1);
      expect(slowPids()).toHaveLength(onInterrupted === "rerun" ? 2 : 1);
      const hookRecords = hooksOf(setup.records());
      const interrupted = hookRecords.filter((r) => r.Outcome === "Interrupted");
      expect(interrupted).toHaveLength(1);
      expect(interrupted[0]).toMatchObject({ EventId: id, ExitCode: -1 });
      expect(interrupted[0]!.Detail).toContain(
        onInterrupted === "rerun" ? "running it again" : "not run again (onInterrupted: skip)",
      );
      const finished = (name: string) =>
        uniqueIds(hookRecords.filter((r) => r.Outcome !== "Interrupted" && r.Detail.startsWith(`${name}:`)));
      expect(finished("quick")).toHaveLength(1);
      expect(finished("missing")).toHaveLength(1);
      expect(finished("slow")).toHaveLength(onInterrupted === "rerun" ? 1 : 0);
      expect(hookRecords.find((r) => r.Detail.startsWith("missing:"))).toMatchObject({
        Outcome: "Failed",
        ExitCode: -1,
      });
      expect(hookRecords.find((r) => r.Detail.startsWith("missing:"))!.Detail).toContain(
        "ENOENT (no such file or directory)",
      );
    }, 60_000);
  }

  it("kill -9 at random moments while events arrive: one POST per event at most, every approval and hook settled exactly once", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 0, max: 1200 }), { minLength: 4, maxLength: 4 }),
        async (killAfterMs) => {
          const sim = await startSimulator({ scenario: "idle", approvalDelayMs: 300 });
          const dir = mkdtempSync(join(tmpdir(), "sef-kill-anywhere-"));
          const runs = join(dir, "runs.log");
          const hooks = [
            {
              name: "note",
              on: ["Scheduled"],
              command: [
                process.execPath,
                "-e",
                `require("fs").appendFileSync(${JSON.stringify(runs)},process.env.SEF_EVENT_ID+"\\n")`,
              ],
            },
          ];
          const setup = agentSetup(sim, { hooks, approval: { mode: "on", rules: [{ eventType: ["Reboot"] }] } });
          const ids = killAfterMs.map((_, i) => `ABCD0000-0000-4000-8000-00000000000${i + 1}`);
          const agents: RunningProcess[] = [];
          try {
            // One new event per round; each round's agent is killed after its random delay.
            for (const [round, delayMs] of killAfterMs.entries()) {
              const agent = setup.start();
              agents.push(agent);
              sim.setEvents(ids.slice(0, round + 1).map(rebootEvent));
              await new Promise((r) => setTimeout(r, 300 + delayMs));
              await agent.stop("SIGKILL");
            }
            const last = setup.start();
            agents.push(last);
            await waitForMetricsUrl(last); // running: what it settles below is its own doing, and SIGTERM meets a running agent
            const settled = (): boolean => {
              const records = setup.records();
              return ids.every(
                (id) =>
                  approvalsOf(records).some(
                    (r) => r.EventId === id && (r.Outcome === "Approved" || r.Outcome === "Interrupted"),
                  ) && hooksOf(records).some((r) => r.EventId === id),
              );
            };
            await waitUntil(settled, 20_000, "every approval and hook to settle");
            expect(await last.stop("SIGTERM")).toBe(0);
            expect(sim.status().approvalsHeld).toBe(0);
          } finally {
            for (const agent of agents) await agent.stop("SIGKILL");
            await sim.close();
          }
          const records = setup.records();
          for (const id of ids) {
            const posts = sim.status().approvals.filter((a) => a.EventId === id);
            const approvals = uniqueIds(approvalsOf(records).filter((r) => r.EventId === id));
            expect(posts.length, `POSTs for ${id}`).toBeLessThanOrEqual(1);
            expect(approvals, `approval records for ${id}`).toHaveLength(1);
            const approved = approvalsOf(records).find((r) => r.EventId === id)!;
            if (approved.Outcome === "Approved") expect(posts).toHaveLength(1);
            const hookIds = uniqueIds(hooksOf(records).filter((r) => r.EventId === id));
            const interrupted = hooksOf(records).filter((r) => r.EventId === id && r.Outcome === "Interrupted");
            expect(hookIds.length, `hook records for ${id}`).toBe(1); // onInterrupted skip: finished or interrupted, once
            const started = readFileSync(runs, "utf8")
              .split("\n")
              .filter((l) => l === id).length;
            expect(started, `runs of the hook for ${id}`).toBeLessThanOrEqual(1);
            if (interrupted.length === 0) expect(started).toBe(1);
          }
        },
      ),
      propertyParams(3303, 3),
    );
  }, 120_000);
});
