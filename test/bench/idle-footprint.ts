// Idle footprint of the built agent polling at 1 Hz, started with the V8 flags its launcher gives `sef run`: CPU (% of one
// core) and peak RSS, read from /proc.
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startSimulator } from "../../src/testbed/simulator/server.js";
import { launcherRunFlags, runCli } from "../helpers/agent-process.js";

export interface FootprintResult {
  seconds: number;
  cpuPercentOfOneCore: number;
  peakRssMb: number;
  polls: number;
}

const clockTicksPerSecond = 100; // USER_HZ on Linux

function cpuTicks(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return Number(fields[11]) + Number(fields[12]); // utime + stime
}

function peakRssKb(pid: number): number {
  const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return match ? Number(match[1]) : NaN;
}

export async function benchIdleFootprint(seconds = 60): Promise<FootprintResult> {
  const sim = await startSimulator({ scenario: "idle" });
  const dir = mkdtempSync(join(tmpdir(), "sef-bench-idle-"));
  const agent = runCli(
    [
      "run",
      "--imds-url",
      sim.url,
      "--poll-interval-ms",
      "1000",
      "--data-dir",
      join(dir, "data"),
      "--sink",
      `jsonl:${join(dir, "r.jsonl")}`,
      "--sink",
      "stdout",
      "--log-level",
      "warn",
    ],
    { nodeFlags: launcherRunFlags() },
  );
  try {
    const pid = agent.child.pid!;
    await new Promise((r) => setTimeout(r, 5000)); // start-up is not idle
    const requestsBefore = countPolls(sim.status().requests);
    const ticksBefore = cpuTicks(pid);
    const startedMs = Date.now();
    await new Promise((r) => setTimeout(r, seconds * 1000));
    const elapsedS = (Date.now() - startedMs) / 1000;
    const cpuS = (cpuTicks(pid) - ticksBefore) / clockTicksPerSecond;
    return {
      seconds: Math.round(elapsedS),
      cpuPercentOfOneCore: Math.round((cpuS / elapsedS) * 100 * 1000) / 1000,
      peakRssMb: Math.round(peakRssKb(pid) / 102.4) / 10,
      polls: countPolls(sim.status().requests) - requestsBefore,
    };
  } finally {
    await agent.stop("SIGTERM");
    await sim.close();
  }
}

function countPolls(requests: Record<string, Record<string, number>>): number {
  return Object.entries(requests)
    .filter(([path]) => path.includes("scheduledevents"))
    .reduce((n, [, byStatus]) => n + Object.values(byStatus).reduce((a, b) => a + b, 0), 0);
}
