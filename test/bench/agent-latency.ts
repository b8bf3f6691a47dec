// Detection latency: from the simulator changing the document to the record being durable in the store
// (the agent's commit log line) and in the jsonl sink (the line appearing in the file), using the built agent
// with the launcher's V8 flags (as every package runs it).
import { mkdtempSync, readFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startSimulator } from "../../src/testbed/simulator/server.js";
import { launcherRunFlags, runCli } from "../helpers/agent-process.js";

export interface LatencyResult {
  pollIntervalMs: number;
  samples: number;
  storeP50Ms: number;
  storeP99Ms: number;
  jsonlP50Ms: number;
  jsonlP99Ms: number;
  targetP99Ms: number;
}

export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return Math.round((sorted[index] ?? NaN) * 10) / 10;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function benchDetectionLatency(pollIntervalMs: number, samples: number): Promise<LatencyResult> {
  const sim = await startSimulator({ scenario: "idle" });
  const dir = mkdtempSync(join(tmpdir(), "sef-bench-latency-"));
  const out = join(dir, "records.jsonl");
  const agent = runCli(
    [
      "run",
      "--imds-url",
      sim.url,
      "--poll-interval-ms",
      String(pollIntervalMs),
      "--data-dir",
      join(dir, "data"),
      "--sink",
      `jsonl:${out}`,
      "--heartbeat-interval-ms",
      "0",
      "--metrics-port",
      "0",
    ],
    { nodeFlags: launcherRunFlags() },
  );
  const storeMs: number[] = [];
  const jsonlMs: number[] = [];
  try {
    // Wait until the agent polls steadily (start-up requests and the first schedule alignment are not steady state).
    while (!agent.stderr().includes("VM identity")) await sleep(20);
    await sleep(Math.max(2000, pollIntervalMs * 3));
    const lines = (): number => (existsSync(out) ? readFileSync(out, "utf8").split("\n").length - 1 : 0);
    const present: Array<{ EventId: string; EventType: string; Resources: string[]; notBeforeInSeconds: number }> = [];
    for (let i = 0; i < samples; i++) {
      await sleep(Math.random() * pollIntervalMs); // land anywhere in the poll cycle
      const id = `BE0C0000-0000-4000-8000-${String(i).padStart(12, "0")}`;
      if (present.length > 0 && i % 2 === 1) present.pop();
      else present.push({ EventId: id, EventType: "Reboot", Resources: ["WestNO_0"], notBeforeInSeconds: 900 });
      const logBefore = agent.stderr().length;
      const { changedAtMs } = sim.setEvents(present);
      // Watch the file for the new line.
      for (;;) {
        if (lines() > i) {
          jsonlMs.push(Date.now() - changedAtMs);
          break;
        }
        if (Date.now() - changedAtMs > 10_000)
          throw new Error(`no record within 10 s (sample ${i}); agent log:\n${agent.stderr().slice(-1500)}`);
        await new Promise((r) => setImmediate(r));
      }
      const line = agent
        .stderr()
        .slice(logBefore)
        .split("\n")
        .find((l) => l.includes("transitions recorded"));
      if (line) storeMs.push((JSON.parse(line) as { time: number }).time - changedAtMs);
    }
  } finally {
    await agent.stop("SIGTERM");
    await sim.close();
  }
  const last = readFileSync(out, "utf8").trim().split("\n").length;
  if (last < samples)
    throw new Error(
      `expected ${samples} records, found ${last}:\n${readFileSync(out, "utf8")}\n${agent.stderr().slice(-3000)}`,
    );
  return {
    pollIntervalMs,
    samples,
    storeP50Ms: percentile(storeMs, 50),
    storeP99Ms: percentile(storeMs, 99),
    jsonlP50Ms: percentile(jsonlMs, 50),
    jsonlP99Ms: percentile(jsonlMs, 99),
    targetP99Ms: pollIntervalMs + 50,
  };
}
