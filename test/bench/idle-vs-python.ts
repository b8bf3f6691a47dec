// Idle cost beside a reference (issue 26): in the same run, against the same simulator holding one event, the packaged
// agent started as systemd starts it (bin/sef run, jsonl sink, 1 Hz) and a minimal Python loop behaving like Microsoft's
// documented sample (python-sample-loop.py), plus a bare Node on the agent's runtime for RSS. CPU is read from /proc
// over the same window for both after a warm-up; each run reports the ratio agent CPU / Python CPU.
// `npx tsx test/bench/idle-vs-python.ts` (SEF_BENCH_* variables below) or part of `npm run bench`.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { startSimulator, type Simulator } from "../../src/testbed/simulator/server.js";
import { bundleAgent } from "../../infra/package/bundle.js";
import { linuxArtifacts, packageVersion, repoRoot } from "../package/artifacts.js";

const clockTicksPerSecond = 100; // USER_HZ on Linux
const pythonLoop = fileURLToPath(new URL("./python-sample-loop.py", import.meta.url));

export interface IdleComparisonOptions {
  /** Seconds after start before the window opens (start-up work is not idle). */
  readonly warmupS: number;
  readonly windowS: number;
  readonly runs: number;
  /** Start the agent through bin/sef (it passes --no-maglev --no-turbofan) or run its node without those flags. */
  readonly launcherFlags: boolean;
  /** The Python loop's connection handling (see python-sample-loop.py). */
  readonly pythonMode: "keepalive" | "new-connection";
  /** Replace the tarball's bundle with one built from this checkout's sources (A/B of a change without repackaging). */
  readonly freshBundle: boolean;
}

export interface ProcessSample {
  /** utime + stime (+ children's), in seconds of CPU over the window. */
  readonly cpuS: number;
  /** Per cent of one core over the window. */
  readonly cpuPercent: number;
  /** On-CPU time of all live threads over the window from schedstat (ns resolution), per cent of one core. */
  readonly schedCpuPercent: number;
  readonly rssMb: number;
}

export interface IdleRun {
  readonly windowS: number;
  /** Scheduled-events requests the simulator answered in the window (agent and loop together: about 2 per second). */
  readonly polls: number;
  readonly agent: ProcessSample;
  readonly python: ProcessSample;
  readonly bareNodeRssMb: number;
  readonly cpuRatio: number;
  readonly schedCpuRatio: number;
  readonly rssRatio: number;
}

export interface IdleComparisonResult {
  readonly options: IdleComparisonOptions;
  readonly runs: IdleRun[];
  readonly medianCpuRatio: number;
  /** Largest distance of a run's ratio from the median, as a fraction of the median (target: within ±20 %). */
  readonly cpuRatioSpread: number;
  readonly medianRssRatio: number;
}

function cpuTicks(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  // Fields after the command: state is [0]; utime [11], stime [12], cutime [13], cstime [14].
  return Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
}

/** Sum of on-CPU nanoseconds of the live threads (schedstat), keyed by thread id so threads that come and go are seen. */
function schedNs(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      out.set(tid, Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]));
    } catch {
      // the thread ended meanwhile
    }
  }
  return out;
}

function schedDeltaNs(before: Map<string, number>, after: Map<string, number>): number {
  let ns = 0;
  for (const [tid, value] of after) ns += value - (before.get(tid) ?? 0);
  return ns;
}

function rssMb(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return match ? Math.round((Number(match[1]) / 1024) * 10) / 10 : NaN;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const round = (n: number, digits = 3): number => Math.round(n * 10 ** digits) / 10 ** digits;

/** The unpacked tarball (bin/sef, lib/sef/node, lib/sef/sef.mjs), optionally with this checkout's bundle in it. */
async function unpackAgent(scratch: string, freshBundle: boolean): Promise<string> {
  const artifacts = await linuxArtifacts(["tar-x64"]);
  const unpacked = join(scratch, "tar");
  mkdirSync(unpacked);
  const tar = spawnSync("tar", ["-xzf", artifacts["tar-x64"]!, "-C", unpacked, "--strip-components=1"]);
  if (tar.status !== 0) throw new Error(`tar failed: ${tar.stderr}`);
  if (freshBundle) {
    rmSync(join(unpacked, "lib", "sef", "chunks"), { recursive: true, force: true });
    await bundleAgent(repoRoot, join(unpacked, "lib", "sef"), packageVersion);
  }
  return unpacked;
}

function pollsBy(sim: Simulator): number {
  const byStatus = sim.status().requests["/metadata/scheduledevents"] ?? {};
  return Object.values(byStatus).reduce((a, b) => a + b, 0);
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGTERM");
  await Promise.race([exited, sleep(10_000)]);
  if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
}

async function oneRun(unpacked: string, scratch: string, index: number, options: IdleComparisonOptions): Promise<IdleRun> {
  const sim = await startSimulator({ scenario: "idle" });
  // One event in the document, far from starting: every poll returns the same non-empty document.
  sim.setEvents([{ EventId: "9d6c2a8e-0b1f-4c55-9f57-6b1d2f3c4a10", EventType: "Freeze", Resources: ["WestNO_0"], notBeforeInSeconds: 86_400 }]);
  const dataDir = join(scratch, `data-${index}`);
  const agentArgs = ["run", "--imds-url", sim.url, "--poll-interval-ms", "1000", "--data-dir", dataDir, "--sink", `jsonl:${join(scratch, `r-${index}.jsonl`)}`, "--log-level", "warn", "--metrics-port", "0"];
  // As systemd starts it (sef.service): NODE_ENV=production, a cache directory for Node's compile cache.
  const env = { ...process.env, NODE_ENV: "production", CACHE_DIRECTORY: join(scratch, "cache") };
  const node = join(unpacked, "lib", "sef", "node");
  const agent = options.launcherFlags
    ? spawn(join(unpacked, "bin", "sef"), agentArgs, { stdio: "ignore", env })
    : spawn(node, [join(unpacked, "lib", "sef", "sef.mjs"), ...agentArgs], { stdio: "ignore", env });
  const python = spawn("python3", [pythonLoop, sim.url, options.pythonMode], { stdio: "ignore" });
  const bare = spawn(node, ["-e", "setInterval(()=>{},1000)"], { stdio: "ignore" });
  try {
    await sleep(options.warmupS * 1000);
    for (const child of [agent, python, bare]) if (child.exitCode !== null) throw new Error(`a process of the bench exited early (${child.spawnfile})`);
    const pids = { agent: agent.pid!, python: python.pid! };
    const ticks = { agent: cpuTicks(pids.agent), python: cpuTicks(pids.python) };
    const sched = { agent: schedNs(pids.agent), python: schedNs(pids.python) };
    const pollsBefore = pollsBy(sim);
    const startedMs = performance.now();
    await sleep(options.windowS * 1000);
    const windowS = (performance.now() - startedMs) / 1000;
    const sample = (pid: number, side: "agent" | "python"): ProcessSample => {
      const cpuS = (cpuTicks(pid) - ticks[side]) / clockTicksPerSecond;
      return {
        cpuS: round(cpuS, 2),
        cpuPercent: round((cpuS / windowS) * 100),
        schedCpuPercent: round((schedDeltaNs(sched[side], schedNs(pid)) / 1e9 / windowS) * 100),
        rssMb: rssMb(pid),
      };
    };
    const a = sample(pids.agent, "agent");
    const p = sample(pids.python, "python");
    const polls = pollsBy(sim) - pollsBefore;
    const bareNodeRssMb = rssMb(bare.pid!);
    return {
      windowS: round(windowS, 1),
      agent: a,
      python: p,
      polls,
      bareNodeRssMb,
      cpuRatio: round(a.cpuPercent / p.cpuPercent, 2),
      schedCpuRatio: round(a.schedCpuPercent / p.schedCpuPercent, 2),
      rssRatio: round(a.rssMb / bareNodeRssMb, 2),
    };
  } finally {
    await Promise.all([stopChild(agent), stopChild(python), stopChild(bare)]);
    await sim.close();
  }
}

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

export async function benchIdleVsPython(options: IdleComparisonOptions): Promise<IdleComparisonResult> {
  const scratch = mkdtempSync(join(tmpdir(), "sef-bench-idle-python-"));
  try {
    const unpacked = await unpackAgent(scratch, options.freshBundle);
    const runs: IdleRun[] = [];
    for (let i = 0; i < options.runs; i++) runs.push(await oneRun(unpacked, scratch, i, options));
    const ratios = runs.map((r) => r.cpuRatio);
    const m = median(ratios);
    return {
      options,
      runs,
      medianCpuRatio: round(m, 2),
      cpuRatioSpread: round(Math.max(...ratios.map((r) => Math.abs(r - m))) / m, 2),
      medianRssRatio: round(median(runs.map((r) => r.rssRatio)), 2),
    };
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

export function idleOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): IdleComparisonOptions {
  return {
    warmupS: Number(env.SEF_BENCH_IDLE_WARMUP_SECONDS ?? 20),
    windowS: Number(env.SEF_BENCH_IDLE_WINDOW_SECONDS ?? 120),
    runs: Number(env.SEF_BENCH_IDLE_RUNS ?? 3),
    launcherFlags: env.SEF_BENCH_IDLE_LAUNCHER_FLAGS !== "0",
    pythonMode: env.SEF_BENCH_IDLE_PYTHON === "new-connection" ? "new-connection" : "keepalive",
    freshBundle: env.SEF_BENCH_IDLE_FRESH_BUNDLE === "1",
  };
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const result = await benchIdleVsPython(idleOptionsFromEnv());
  console.log(JSON.stringify(result, null, 2));
  process.exit(0);
}
