// Approvals, hooks, heartbeats and metrics through the built agent against the simulator.
import { describe, expect, it } from "vitest";
import { mkdtempSync, writeFileSync, readFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startSimulator, type Simulator } from "../../src/testbed/simulator/server.js";
import { runCli, readJsonl, waitUntil, type RunningProcess, waitForMetricsUrl } from "../helpers/agent-process.js";
import { sampleApprovalPolicy } from "../../src/agent/actions/approval/policy.js";
import type { SefRecord } from "../../src/contract/record.js";
import { ledgersSettled } from "../helpers/ledger-probe.js";

function startAgent(sim: Simulator, config: Record<string, unknown>) {
  const dir = mkdtempSync(join(tmpdir(), "sef-actions-"));
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
  const agent = runCli(["run", "--config", configPath]);
  return { agent, out, dir, dataDir: join(dir, "data"), records: () => readJsonl<SefRecord>(out) };
}

async function finish(agent: RunningProcess): Promise<void> {
  expect(await agent.stop("SIGTERM")).toBe(0);
}

const event = (id: string, over: Record<string, unknown> = {}) => ({
  EventId: id,
  EventType: "Reboot",
  EventSource: "Platform",
  Resources: ["WestNO_0", "WestNO_1"],
  notBeforeInSeconds: 900,
  autoStart: false,
  ...over,
});

describe.concurrent("actions end to end", () => {
  it("applies the documented sample policy: a User event is approved and moves to Started, a Platform reboot is not", async () => {
    const sim = await startSimulator({ scenario: "idle" });
    const { agent, records, dataDir } = startAgent(sim, { approval: sampleApprovalPolicy });
    try {
      sim.setEvents([
        event("AAAA0000-0000-4000-8000-000000000001", { EventSource: "User" }),
        event("AAAA0000-0000-4000-8000-000000000002"),
      ]);
      await waitUntil(
        () => records().some((r) => r.RecordType === "Transition" && r.EventStatus === "Started"),
        15_000,
        "the approved event to start",
      );
      // Settled: the policy has been applied to both events' transitions (a wrong approval would be pending or sent).
      await waitUntil(() => ledgersSettled(dataDir), 15_000, "the agent to settle its actions and deliveries");
      await finish(agent);
    } finally {
      await agent.stop("SIGKILL");
      await sim.close();
    }
    expect(sim.status().approvals.map((a) => a.EventId)).toEqual(["AAAA0000-0000-4000-8000-000000000001"]);
    const approvals = records().filter((r) => r.RecordType === "Approval");
    expect(approvals).toMatchObject([
      { EventId: "AAAA0000-0000-4000-8000-000000000001", Outcome: "Approved", HttpStatus: 200 },
    ]);
    const transitions = records()
      .filter((r) => r.RecordType === "Transition")
      .map((r) => `${r.EventId.slice(-1)}:${(r as { EventStatus: string }).EventStatus}`);
    expect(transitions).toEqual(expect.arrayContaining(["1:Scheduled", "2:Scheduled", "1:Started"]));
    expect(transitions).not.toContain("2:Started");
  });

  it("lets only the elected VM approve when two agents share one simulator", async () => {
    const sim = await startSimulator({ scenario: "idle" });
    const first = startAgent(sim, { approval: { mode: "on", rules: [{ eventType: ["Reboot"] }] } });
    const second = startAgent(sim, {
      approval: { mode: "on", rules: [{ eventType: ["Reboot"] }] },
      imdsExtraHeaders: { "X-Sef-Sim-Vm": "WestNO_1" },
    });
    try {
      await waitUntil(
        () => first.agent.stderr().includes("VM identity") && second.agent.stderr().includes("VM identity"),
        15_000,
        "both agents to start",
      );
      sim.setEvents([event("BBBB0000-0000-4000-8000-000000000001", { Resources: ["WestNO_0", "WestNO_1"] })]);
      await waitUntil(
        () =>
          [first, second].every((a) =>
            a.records().some((r) => r.RecordType === "Transition" && r.EventStatus === "Started"),
          ),
        15_000,
        "both agents to see Started",
      );
      await Promise.all([finish(first.agent), finish(second.agent)]);
    } finally {
      await Promise.all([first.agent.stop("SIGKILL"), second.agent.stop("SIGKILL")]);
      await sim.close();
    }
    expect(sim.status().approvals).toHaveLength(1);
    expect(first.records().filter((r) => r.RecordType === "Approval")).toHaveLength(1);
    expect(second.records().filter((r) => r.RecordType === "Approval")).toHaveLength(0);
    expect(second.records().find((r) => r.RecordType === "Transition")).toMatchObject({
      VmName: "WestNO_1",
      AffectsThisVm: true,
    });
  });

  it("in dry-run sends no approval but records what it would do", async () => {
    const sim = await startSimulator({ scenario: "idle" });
    const { agent, records } = startAgent(sim, { approval: { mode: "dry-run", rules: [{ eventType: ["Reboot"] }] } });
    try {
      sim.setEvents([event("CCCC0000-0000-4000-8000-000000000001")]);
      await waitUntil(() => records().some((r) => r.RecordType === "Approval"), 15_000, "a dry-run approval record");
      await finish(agent);
    } finally {
      await agent.stop("SIGKILL");
      await sim.close();
    }
    expect(sim.status().approvals).toHaveLength(0);
    expect(sim.status().document.Events[0]).toMatchObject({ EventStatus: "Scheduled" });
    expect(records().filter((r) => r.RecordType === "Approval")).toMatchObject([{ Outcome: "DryRun", HttpStatus: 0 }]);
  });

  it("runs a prepare hook, records it, and approves only after it succeeded", async () => {
    const sim = await startSimulator({ scenario: "idle" });
    const dir = mkdtempSync(join(tmpdir(), "sef-hook-"));
    const marker = join(dir, "prepared.json");
    const hook = {
      name: "drain",
      on: ["Scheduled"],
      command: [
        process.execPath,
        "-e",
        `let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{require("fs").writeFileSync(${JSON.stringify(marker)},JSON.stringify({stdin:JSON.parse(s).EventId,env:process.env.SEF_EVENT_ID}))})`,
      ],
      timeoutMs: 10_000,
    };
    const { agent, records } = startAgent(sim, {
      hooks: [hook],
      approval: { mode: "on", rules: [{ eventType: ["Reboot"] }], requirePrepareHookSuccess: true },
    });
    const id = "DDDD0000-0000-4000-8000-000000000001";
    try {
      sim.setEvents([event(id)]);
      await waitUntil(() => records().some((r) => r.RecordType === "Approval"), 15_000, "the approval after the hook");
      await finish(agent);
    } finally {
      await agent.stop("SIGKILL");
      await sim.close();
    }
    expect(existsSync(marker)).toBe(true);
    expect(JSON.parse(readFileSync(marker, "utf8"))).toEqual({ stdin: id, env: id });
    const kinds = records().map((r) => r.RecordType);
    expect(kinds.indexOf("Hook")).toBeLessThan(kinds.indexOf("Approval"));
    expect(records().find((r) => r.RecordType === "Hook")).toMatchObject({
      Outcome: "Succeeded",
      ExitCode: 0,
      EventId: id,
    });
  });

  it("serves metrics and health, and writes heartbeats", async () => {
    const sim = await startSimulator({ scenario: "idle" });
    const { agent, records } = startAgent(sim, { heartbeatIntervalMs: 500 });
    let metrics = "";
    let ready = 0;
    try {
      const line = await waitForMetricsUrl(agent);
      await waitUntil(
        () => records().filter((r) => r.RecordType === "Heartbeat").length >= 2,
        15_000,
        "two heartbeats",
      );
      metrics = await (await fetch(`${line}/metrics`)).text();
      ready = (await fetch(`${line}/readyz`)).status;
      expect((await fetch(`${line}/healthz`)).status).toBe(200);
      await finish(agent);
    } finally {
      await agent.stop("SIGKILL");
      await sim.close();
    }
    expect(ready).toBe(200);
    expect(metrics).toMatch(/^sef_polls_total\{outcome="(ok|unchanged)"\} \d+/m);
    expect(metrics).toMatch(/^sef_records_total\{type="Heartbeat"\} \d+/m);
    expect(metrics).toMatch(/^sef_outbox_depth\{sink="jsonl:/m);
    const beat = records().find((r) => r.RecordType === "Heartbeat")!;
    expect(beat).toMatchObject({ VmName: "WestNO_0", AgentVersion: expect.any(String) });
    expect(JSON.parse((beat as { Detail: string }).Detail)).toHaveProperty("polls");
  });
});
