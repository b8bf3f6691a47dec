// The built agent polling the simulator conditionally: 304s are counted and read as "nothing changed" (no duplicate
// record, no store write), a change after them is still recorded once, and the poll series read at scrape time agree.
import { describe, expect, it } from "vitest";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startSimulator } from "../../src/testbed/simulator/server.js";
import { readJsonl, runCli, waitForMetricsUrl, waitUntil } from "../helpers/agent-process.js";

/** The value of one series in a Prometheus text exposition (NaN when absent). */
function seriesValue(metrics: string, series: string): number {
  const line = metrics.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? Number.NaN : Number(line.slice(series.length + 1));
}

describe("conditional polls of the built agent", () => {
  it("counts 304s, records each transition once, and reads the poll series when scraped", async () => {
    const sim = await startSimulator({ scenario: "idle" });
    sim.setEvents([
      {
        EventId: "5b1e7c2a-3d4f-4a6b-8c9d-0e1f2a3b4c5d",
        EventType: "Freeze",
        Resources: ["WestNO_0"],
        notBeforeInSeconds: 86_400,
      },
    ]);
    const dir = mkdtempSync(join(tmpdir(), "sef-conditional-"));
    const jsonl = join(dir, "out.jsonl");
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
        `jsonl:${jsonl}`,
      ],
      {
        env: { SEF_METRICS_PORT: "0" },
      },
    );
    try {
      const url = await waitForMetricsUrl(agent);
      const scrape = async (): Promise<string> => (await fetch(`${url}/metrics`)).text();
      const notModified = (): number => sim.status().requests["/metadata/scheduledevents"]?.["304"] ?? 0;
      await waitUntil(() => notModified() >= 5, 15_000, "five 304 answers");
      const transitions = (): Array<{ EventStatus: string }> =>
        readJsonl<{ RecordType: string; EventStatus: string }>(jsonl).filter((r) => r.RecordType === "Transition");
      expect(transitions().map((r) => r.EventStatus)).toEqual(["Scheduled"]);
      let metrics = await scrape();
      expect(seriesValue(metrics, "sef_imds_not_modified_total")).toBeGreaterThanOrEqual(5);
      expect(seriesValue(metrics, 'sef_polls_total{outcome="ok"}')).toBe(1);
      expect(seriesValue(metrics, 'sef_polls_total{outcome="unchanged"}')).toBeGreaterThanOrEqual(5);
      expect(seriesValue(metrics, 'sef_events{status="Scheduled"}')).toBe(1);
      expect(seriesValue(metrics, "sef_document_incarnation")).toBe(sim.status().incarnation);
      expect(seriesValue(metrics, "sef_last_good_poll_timestamp_seconds")).toBeGreaterThan(Date.now() / 1000 - 5);

      sim.setEvents([]);
      await waitUntil(() => transitions().length === 2, 15_000, "the event's end");
      expect(transitions().map((r) => r.EventStatus)).toEqual(["Scheduled", "Canceled"]);
      const before = notModified();
      await waitUntil(() => notModified() >= before + 3, 15_000, "304 answers after the change");
      metrics = await scrape();
      expect(seriesValue(metrics, 'sef_polls_total{outcome="ok"}')).toBe(2);
      expect(seriesValue(metrics, 'sef_events{status="Scheduled"}')).toBe(0);
      expect(transitions()).toHaveLength(2);
      expect(await agent.stop("SIGTERM")).toBe(0);
    } finally {
      await agent.stop("SIGKILL");
      await sim.close();
    }
  });
});
