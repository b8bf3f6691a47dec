// The built agent says goodbye: a Heartbeat with Outcome "Stopping" when its own VM's Terminate is announced, and as
// its very last record on SIGTERM, so the silent-agent alert leaves it out. Every record carries the VM's tags.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { SefRecord } from "../../src/contract/record.js";
import { startSimulator } from "../../src/testbed/simulator/server.js";
import { loadScenario } from "../../src/testbed/simulator/scenarios.js";
import { readJsonl, runCli } from "../helpers/agent-process.js";
import { waitForMorePolls } from "../helpers/polls.js";

const reasonOf = (r: SefRecord): string | undefined =>
  r.RecordType === "Heartbeat" && r.Outcome === "Stopping"
    ? (JSON.parse(r.Detail) as { reason: string }).reason
    : undefined;

describe("goodbye heartbeat", () => {
  it("is written when this VM's Terminate is scheduled, and is the last record after SIGTERM", async () => {
    const tags = { env: "prod", "cost-center": "4711;eu" };
    const sim = await startSimulator({ scenario: loadScenario("scaleset-terminate"), vmTags: { WestNO_0: tags } });
    const dir = mkdtempSync(join(tmpdir(), "sef-goodbye-"));
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
        "60000",
      ],
      { env: { SEF_METRICS_PORT: "0" } },
    );
    try {
      await sim.waitForEnd();
      await waitForMorePolls(sim, 3, { detail: () => agent.stderr().slice(-2000) });
      expect(await agent.stop("SIGTERM")).toBe(0);
    } finally {
      await agent.stop("SIGKILL");
      await sim.close();
    }
    const records = readJsonl<SefRecord>(out);
    const summary = records.map((r) =>
      r.RecordType === "Transition" ? `${r.EventType}:${r.EventStatus}` : `${r.RecordType}:${reasonOf(r) ?? "beat"}`,
    );
    const detail = `records: ${summary.join(", ")}\nstderr:\n${agent.stderr().slice(-3000)}`;
    expect(summary[0], detail).toBe("Heartbeat:beat");
    const scheduledAt = summary.indexOf("Terminate:Scheduled");
    const goodbyeAt = summary.findIndex((s) => s.startsWith("Heartbeat:Terminate Scheduled"));
    expect(scheduledAt, detail).toBeGreaterThan(0);
    expect(goodbyeAt, detail).toBeGreaterThan(scheduledAt);
    expect(summary.at(-1), detail).toBe("Heartbeat:shutdown");
    expect(records.at(-1)).toMatchObject({ RecordType: "Heartbeat", Outcome: "Stopping", VmName: "WestNO_0" });
    // The VM's resource tags from instance metadata (tagsList: a value may hold ";"), on transitions and heartbeats.
    // (A heartbeat written before instance metadata first answered knows neither the VM nor its tags.)
    const identified = records.filter((r) => r.VmName !== "");
    expect(identified.filter((r) => r.RecordType === "Transition").length).toBeGreaterThan(0);
    for (const r of identified) expect(r.Tags, `${r.RecordType} ${r.RecordId}`).toEqual(tags);
    // The statistics the fleet workbook reads: backlog and dead-letters per sink.
    expect(JSON.parse((records.at(-1) as { Detail: string }).Detail)).toMatchObject({
      state: "Stopping",
      undelivered: { [`jsonl:${out}`]: 0 },
      deadLettered: {},
    });
  });
});
