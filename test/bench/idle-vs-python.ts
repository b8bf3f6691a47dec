// Idle cost beside a reference (issue 26): in the same run, against the same simulator holding one event, the packaged
// agent started as systemd starts it (bin/sef run, jsonl sink, 1 Hz) and a minimal Python loop behaving like Microsoft's
// documented sample (python-sample-loop.py), plus a bare Node on the agent's runtime for RSS. CPU is read from /proc
// over the same window for both after a warm-up; each run reports the ratio agent CPU / Python CPU. The headline is
// against the loop that does what the documented sample does (a new connection per poll: requests.get without a
// Session); the kept-alive loop is the second, stricter reference.
// `npx tsx test/bench/idle-vs-python.ts` (SEF_BENCH_IDLE_* variables at the end) or part of `npm run bench`.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
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
  /** Replace the tarball's bundle with one built from this checkout's sources (A/B of a change without repackaging). */
  readonly freshBundle: boolean;
}

export interface ProcessSample {
  /** utime + stime (+ children's), in seconds of CPU over the window. */
  readonly cpuS: number;
  /** Per cent of one core over the window (from /proc/PID/stat). */
  readonly cpuPercent: number;
  /** On-CPU time of all live threads over the window from schedstat (ns resolution), per cent of one core. */
  readonly schedCpuPercent: number;
  readonly rssMb: number;
}

/**
 * The processes of one run, all at once against one simulator: the agent through bin/sef (which passes
 * --no-maglev --no-turbofan, as systemd starts it), the same agent's node without those flags, the Python loop with one
 * kept-alive connection (like the agent) and with a new connection per request (like the documented sample's
 * requests.get), and a bare Node.
 */
export const idleSides = ["agent", "agentWithoutLauncherFlags", "pythonKeepAlive", "pythonNewConnection"] as const;
export type IdleSide = (typeof idleSides)[number];

export interface IdleRun {
  readonly windowS: number;
  /** Scheduled-events requests the simulator answered in the window (all clients together: about 4 per second). */
  readonly polls: number;
  readonly sides: Record<IdleSide, ProcessSample>;
  readonly bareNodeRssMb: number;
  /** Agent CPU / Python CPU, per agent variant and Python mode (from /proc/PID/stat). */
  readonly cpuRatio: Record<string, number>;
  /** The same from schedstat (nanoseconds: at ~0.05 % of a core, /proc/PID/stat's 10 ms ticks count only ~6 in 2 min). */
  readonly schedCpuRatio: Record<string, number>;
  readonly rssRatio: { agent: number; agentWithoutLauncherFlags: number };
  /** 1-minute load average of the machine at the window's start and end (the machine may be shared). */
  readonly loadAverage: { start: number; end: number };
}

export interface IdleComparisonResult {
  readonly options: IdleComparisonOptions;
  readonly runs: IdleRun[];
  /** Per ratio: the median over the runs and the largest distance of a run from it, as a fraction of the median. */
  readonly cpuRatios: Record<string, { median: number; spread: number }>;
  readonly schedCpuRatios: Record<string, { median: number; spread: number }>;
  readonly medianRssRatio: { agent: number; agentWithoutLauncherFlags: number };
  /**
   * The figures (schedstat): the agent through bin/sef against the documented sample's loop (a new connection
   * per poll; target ≤ 1.0) and against the stricter kept-alive loop.
   */
  readonly headline: {
    agentVsDocumentedSample: { median: number; spread: number };
    agentVsKeptAliveLoop: { median: number; spread: number };
  };
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

export function rssMb(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return match ? Math.round((Number(match[1]) / 1024) * 10) / 10 : NaN;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const round = (n: number, digits = 3): number => Math.round(n * 10 ** digits) / 10 ** digits;

/** The unpacked tarball (bin/sef, lib/sef/node, lib/sef/sef.mjs), optionally with this checkout's bundle in it. */
export async function unpackAgent(scratch: string, freshBundle: boolean): Promise<string> {
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

export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGTERM");
  await Promise.race([exited, sleep(10_000)]);
  if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
}

async function oneRun(
  unpacked: string,
  scratch: string,
  index: number,
  options: IdleComparisonOptions,
): Promise<IdleRun> {
  const sim = await startSimulator({ scenario: "idle" });
  // One event in the document, far from starting: every poll returns the same non-empty document.
  sim.setEvents([
    {
      EventId: "9d6c2a8e-0b1f-4c55-9f57-6b1d2f3c4a10",
      EventType: "Freeze",
      Resources: ["WestNO_0"],
      notBeforeInSeconds: 86_400,
    },
  ]);
  const agentArgs = (name: string): string[] => {
    const dir = join(scratch, `${name}-${index}`);
    return [
      "run",
      "--imds-url",
      sim.url,
      "--poll-interval-ms",
      "1000",
      "--data-dir",
      join(dir, "data"),
      "--sink",
      `jsonl:${join(dir, "r.jsonl")}`,
      "--log-level",
      "warn",
      "--metrics-port",
      "0",
    ];
  };
  // As systemd starts it (sef.service): NODE_ENV=production, a cache directory for Node's compile cache.
  const env = { ...process.env, NODE_ENV: "production", CACHE_DIRECTORY: join(scratch, "cache") };
  const node = join(unpacked, "lib", "sef", "node");
  const children: Record<IdleSide, ChildProcess> = {
    agent: spawn(join(unpacked, "bin", "sef"), agentArgs("agent"), { stdio: "ignore", env }),
    agentWithoutLauncherFlags: spawn(node, [join(unpacked, "lib", "sef", "sef.mjs"), ...agentArgs("noflags")], {
      stdio: "ignore",
      env,
    }),
    pythonKeepAlive: spawn("python3", [pythonLoop, sim.url, "keepalive"], { stdio: "ignore" }),
    // the documented sample's behaviour, the headline's reference
    pythonNewConnection: spawn("python3", [pythonLoop, sim.url, "new-connection"], { stdio: "ignore" }),
  };
  const bare = spawn(node, ["-e", "setInterval(()=>{},1000)"], { stdio: "ignore" });
  try {
    await sleep(options.warmupS * 1000);
    for (const child of [...Object.values(children), bare])
      if (child.exitCode !== null)
        throw new Error(`a process of the bench exited early (${child.spawnargs.join(" ")})`);
    const before = Object.fromEntries(
      idleSides.map((side) => [side, { ticks: cpuTicks(children[side].pid!), sched: schedNs(children[side].pid!) }]),
    );
    const pollsBefore = pollsBy(sim);
    const loadStart = loadavg()[0]!;
    const startedMs = performance.now();
    await sleep(options.windowS * 1000);
    const windowS = (performance.now() - startedMs) / 1000;
    const sample = (side: IdleSide): ProcessSample => {
      const pid = children[side].pid!;
      const cpuS = (cpuTicks(pid) - before[side]!.ticks) / clockTicksPerSecond;
      return {
        cpuS: round(cpuS, 2),
        cpuPercent: round((cpuS / windowS) * 100),
        schedCpuPercent: round((schedDeltaNs(before[side]!.sched, schedNs(pid)) / 1e9 / windowS) * 100),
        rssMb: rssMb(pid),
      };
    };
    const sides = Object.fromEntries(idleSides.map((side) => [side, sample(side)])) as Record<IdleSide, ProcessSample>;
    const polls = pollsBy(sim) - pollsBefore;
    const bareNodeRssMb = rssMb(bare.pid!);
    const cpuRatio: Record<string, number> = {};
    const schedCpuRatio: Record<string, number> = {};
    for (const agent of ["agent", "agentWithoutLauncherFlags"] as const) {
      for (const python of ["pythonKeepAlive", "pythonNewConnection"] as const) {
        cpuRatio[`${agent}/${python}`] = round(sides[agent].cpuPercent / sides[python].cpuPercent, 2);
        schedCpuRatio[`${agent}/${python}`] = round(sides[agent].schedCpuPercent / sides[python].schedCpuPercent, 2);
      }
    }
    return {
      windowS: round(windowS, 1),
      polls,
      sides,
      bareNodeRssMb,
      cpuRatio,
      schedCpuRatio,
      rssRatio: {
        agent: round(sides.agent.rssMb / bareNodeRssMb, 2),
        agentWithoutLauncherFlags: round(sides.agentWithoutLauncherFlags.rssMb / bareNodeRssMb, 2),
      },
      loadAverage: { start: round(loadStart, 2), end: round(loadavg()[0]!, 2) },
    };
  } finally {
    await Promise.all([...Object.values(children), bare].map(stopChild));
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
    const summarize = (pick: (run: IdleRun) => Record<string, number>): IdleComparisonResult["cpuRatios"] => {
      const out: IdleComparisonResult["cpuRatios"] = {};
      for (const key of Object.keys(pick(runs[0]!))) {
        const values = runs.map((r) => pick(r)[key]!);
        const m = median(values);
        out[key] = { median: round(m, 2), spread: round(Math.max(...values.map((v) => Math.abs(v - m))) / m, 2) };
      }
      return out;
    };
    const schedCpuRatios = summarize((r) => r.schedCpuRatio);
    return {
      options,
      runs,
      headline: {
        agentVsDocumentedSample: schedCpuRatios["agent/pythonNewConnection"]!,
        agentVsKeptAliveLoop: schedCpuRatios["agent/pythonKeepAlive"]!,
      },
      cpuRatios: summarize((r) => r.cpuRatio),
      schedCpuRatios,
      medianRssRatio: {
        agent: round(median(runs.map((r) => r.rssRatio.agent)), 2),
        agentWithoutLauncherFlags: round(median(runs.map((r) => r.rssRatio.agentWithoutLauncherFlags)), 2),
      },
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
    freshBundle: env.SEF_BENCH_IDLE_FRESH_BUNDLE === "1",
  };
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const result = await benchIdleVsPython(idleOptionsFromEnv());
  console.log(JSON.stringify(result, null, 2));
  process.exit(0);
}
