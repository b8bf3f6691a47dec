// Every shipped scenario, played by the simulator, gives exactly its expected records from the built agent.
import { describe, expect, it } from "vitest";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startSimulator } from "../../src/testbed/simulator/server.js";
import { listScenarioNames, loadScenario } from "../../src/testbed/simulator/scenarios.js";
import { runCli, readJsonl } from "../helpers/agent-process.js";
import type { TransitionRecord } from "../../src/contract/record.js";
import { waitForMorePolls } from "../helpers/polls.js";

const names = listScenarioNames();

describe.concurrent("scenarios end to end", () => {
  it("ships the scenarios the issue asks for", () => {
    for (const required of [
      "live-migration",
      "user-reboot",
      "redeploy",
      "cancelled-maintenance",
      "hardware-failure",
      "spot-preempt",
      "scaleset-terminate",
      "degraded-hardware",
      "two-events",
      "neighbour-event",
      "disable-reset",
      "fault-500-burst",
      "fault-410",
      "fault-429",
      "fault-slow-first-call",
      "fault-malformed-json",
      "fault-huge-body",
    ]) {
      expect(names).toContain(required);
    }
  });

  for (const name of names) {
    it(`${name} gives exactly the expected records`, async () => {
      const scenario = loadScenario(name);
      const sim = await startSimulator({ scenario });
      const dir = mkdtempSync(join(tmpdir(), `sef-it-${name}-`));
      const out = join(dir, "records.jsonl");
      const agent = runCli(
        [
          "run",
          "--imds-url",
          sim.url,
          "--poll-interval-ms",
          "200",
          "--data-dir",
          join(dir, "data"),
          "--sink",
          `jsonl:${out}`,
          "--log-level",
          "info",
          "--heartbeat-interval-ms",
          "0",
        ],
        { env: { SEF_METRICS_PORT: "0" } },
      );
      try {
        await sim.waitForEnd();
        await waitForMorePolls(sim, 3, { detail: () => agent.stderr().slice(-2000) }); // the last step collected, twice
        expect(await agent.stop("SIGTERM")).toBe(0);
      } finally {
        await agent.stop("SIGKILL");
        await sim.close();
      }
      const records = readJsonl<TransitionRecord>(out).filter((r) => r.RecordType === "Transition");
      const got = records.map((r) => ({
        EventId: r.EventId,
        EventStatus: r.EventStatus,
        PreviousStatus: r.PreviousStatus,
        AffectsThisVm: r.AffectsThisVm,
        ObservationGap: r.ObservationGap,
      }));
      const expected = (scenario.expect ?? []).map((e) => ({ ...e }));
      expect(got, `stderr:\n${agent.stderr().slice(-4000)}`).toEqual(expected);
      const logs = agent.stderr();
      if (name.startsWith("fault-"))
        expect(logs).toMatch(
          /IMDS poll failed|IMDS rejected|IMDS request failed|IMDS answered slowly|event that cannot be read/,
        );
    });
  }
});
