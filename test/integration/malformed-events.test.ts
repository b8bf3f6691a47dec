// One unreadable event in a valid IMDS document (issue 12 item 2), end to end: the built agent against the simulator
// records the valid events (Started and Completed included), forwards the bad one once as a MalformedEvent record,
// logs it at warn with its EventId and counts it by reason.
import { describe, expect, it } from "vitest";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startSimulator } from "../../src/testbed/simulator/server.js";
import { loadScenario } from "../../src/testbed/simulator/scenarios.js";
import { runCli, readJsonl, waitForMetricsUrl, logLines } from "../helpers/agent-process.js";
import type { MalformedEventRecord, SefRecord } from "../../src/contract/record.js";
import { waitForMorePolls } from "../helpers/polls.js";

describe("malformed events", () => {
  it("forwards valid events as usual and the malformed one once, flagged, with its raw fields", async () => {
    const scenario = loadScenario("fault-malformed-event");
    const sim = await startSimulator({ scenario });
    const dir = mkdtempSync(join(tmpdir(), "sef-malformed-"));
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
        "--heartbeat-interval-ms",
        "0",
      ],
      { env: { SEF_METRICS_PORT: "0" } },
    );
    let metrics = "";
    try {
      const metricsUrl = await waitForMetricsUrl(agent);
      await sim.waitForEnd();
      await waitForMorePolls(sim, 3, { detail: () => agent.stderr().slice(-2000) });
      metrics = await (await fetch(`${metricsUrl}/metrics`)).text();
      expect(await agent.stop("SIGTERM")).toBe(0);
    } finally {
      await agent.stop("SIGKILL");
      await sim.close();
    }
    const records = readJsonl<SefRecord>(out);
    const transitions = records
      .filter((r) => r.RecordType === "Transition")
      .map((r) => `${r.EventId.slice(-4)}:${(r as { EventStatus: string }).EventStatus}`);
    expect(transitions, agent.stderr().slice(-3000)).toEqual([
      "F00A:Scheduled",
      "B1BE:Scheduled",
      "F00A:Started",
      "F00A:Completed",
      "B1BE:Canceled",
    ]);
    const hibernate = records.find((r) => r.RecordType === "Transition" && r.EventId.endsWith("B1BE"));
    expect(hibernate).toMatchObject({ EventType: "Hibernate", EventSource: "Guest" });

    const malformed = records.filter((r): r is MalformedEventRecord => r.RecordType === "MalformedEvent");
    expect(malformed).toHaveLength(1);
    expect(malformed[0]).toMatchObject({
      EventId: "A1B2C3D4-0000-4000-8000-000000000BAD",
      EventType: "Reboot",
      EventStatus: "Scheduled",
      Resources: [],
      Outcome: "resources",
      VmName: "WestNO_0",
    });
    const detail = JSON.parse(malformed[0]!.Detail) as { problem: string; event: Record<string, unknown> };
    expect(detail.problem).toMatch(/Resources is not an array of strings/);
    expect(detail.event.Resources).toBe("WestNO_0");

    expect(metrics).toMatch(/^sef_imds_events_malformed_total\{reason="resources"\} 1$/m);
    expect(metrics).toMatch(/^sef_polls_total\{outcome="malformed"\} 0$/m);
    const warn = logLines(agent.stderr()).filter((l) => l.eventId === "A1B2C3D4-0000-4000-8000-000000000BAD");
    expect(warn).toHaveLength(1);
    expect(warn[0]).toMatchObject({ reason: "resources" });
    expect(warn[0]!.level).toBe("warn");
  });
});
