// Side by side: the benches a refactor could move (detection latency, idle footprint, the sinks' drains through the
// ledger, the fleet end to end, the Kubernetes action), run from this checkout and from another (the code before a
// change), each bench of each tree in a process of its own, alternating in one run so both see the same machine.
// `npx tsx test/bench/side-by-side.ts --before DIR [--rounds N] [--only WORD]` (WORD: the benches whose name holds
// it); DIR is a checkout that has run `npm ci` (its dist/ built). Prints each figure as it comes and writes
// bench-side-by-side.json.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { parseArgs } from "node:util";

interface Tree {
  readonly label: string;
  readonly root: string;
}

/** One bench of a tree: what it measures, and the figures kept of its result. */
interface Bench {
  readonly name: string;
  run(root: string): Promise<Record<string, number>>;
}

async function benchModule<T>(root: string, file: string): Promise<T> {
  return (await import(resolve(root, "test/bench", file))) as T;
}

type Latency = {
  benchDetectionLatency(
    intervalMs: number,
    samples: number,
  ): Promise<{ storeP50Ms: number; storeP99Ms: number; jsonlP99Ms: number }>;
};
type Idle = { benchIdleFootprint(seconds: number): Promise<{ cpuPercentOfOneCore: number; peakRssMb: number }> };
type EventHubs = {
  benchEventHubsDrain(
    records: number,
    routing: "key" | "hash",
  ): Promise<{ recordsPerSecond: number; cpuMicrosecondsPerRecord: number }>;
};
type LogAnalytics = {
  benchLogAnalyticsDrain(records: number): Promise<{ recordsPerSecond: number; cpuMicrosecondsPerRecord: number }>;
};
type Fleet = { benchFleetEndToEnd(events: number, agents: number): Promise<{ p50Ms: number; p99Ms: number }> };
type KubernetesDrain = {
  benchKubernetesDrain(
    pods: number,
  ): Promise<{ scheduledToApprovalSeconds: number; drainSeconds: number; peakRssMb: number }>;
  benchKubernetesIdleRss(
    seconds: number,
  ): Promise<{ withoutActionRssMb: number; withActionRssMb: number; ratio: number }>;
  benchKubernetesCordonLatency(samples: number): Promise<{ p50Ms: number; p99Ms: number }>;
};
type KubernetesCluster = {
  benchKubernetesClusterApproval(
    nodes: number,
    pods: number,
  ): Promise<{ approvals: number; scheduledToApprovalSeconds: number; lastDrainedToApprovalSeconds: number }>;
};

const drainRecords = Number(process.env.SEF_BENCH_DRAIN_RECORDS ?? 100_000);

const benches: readonly Bench[] = [
  {
    name: "detection latency, 1000 ms polling (60 changes)",
    run: async (root) =>
      pick(await (await benchModule<Latency>(root, "agent-latency.ts")).benchDetectionLatency(1000, 60), [
        "storeP50Ms",
        "storeP99Ms",
        "jsonlP99Ms",
      ]),
  },
  {
    name: "detection latency, 200 ms polling (150 changes)",
    run: async (root) =>
      pick(await (await benchModule<Latency>(root, "agent-latency.ts")).benchDetectionLatency(200, 150), [
        "storeP50Ms",
        "storeP99Ms",
        "jsonlP99Ms",
      ]),
  },
  {
    name: "idle at 1 Hz over 60 s",
    run: async (root) =>
      pick(await (await benchModule<Idle>(root, "idle-footprint.ts")).benchIdleFootprint(60), [
        "cpuPercentOfOneCore",
        "peakRssMb",
      ]),
  },
  {
    name: `Event Hubs drain, ${drainRecords} records, key routing`,
    run: async (root) =>
      pick(await (await benchModule<EventHubs>(root, "eventhubs-drain.ts")).benchEventHubsDrain(drainRecords, "key"), [
        "recordsPerSecond",
        "cpuMicrosecondsPerRecord",
      ]),
  },
  {
    name: `Event Hubs drain, ${drainRecords} records, hash routing`,
    run: async (root) =>
      pick(await (await benchModule<EventHubs>(root, "eventhubs-drain.ts")).benchEventHubsDrain(drainRecords, "hash"), [
        "recordsPerSecond",
        "cpuMicrosecondsPerRecord",
      ]),
  },
  {
    name: `Log Analytics drain, ${drainRecords} records`,
    run: async (root) =>
      pick(
        await (await benchModule<LogAnalytics>(root, "loganalytics-drain.ts")).benchLogAnalyticsDrain(drainRecords),
        ["recordsPerSecond", "cpuMicrosecondsPerRecord"],
      ),
  },
  {
    name: "sef-fleet end to end (100 events, 3 agents)",
    run: async (root) =>
      pick(await (await benchModule<Fleet>(root, "fleet.ts")).benchFleetEndToEnd(100, 3), ["p50Ms", "p99Ms"]),
  },
  {
    name: "kubernetes drain, one node of 100 pods",
    run: async (root) =>
      pick(await (await benchModule<KubernetesDrain>(root, "kubernetes-drain.ts")).benchKubernetesDrain(100), [
        "scheduledToApprovalSeconds",
        "drainSeconds",
        "peakRssMb",
      ]),
  },
  {
    name: "kubernetes cluster approval, three nodes of 100 pods",
    run: async (root) =>
      pick(
        await (
          await benchModule<KubernetesCluster>(root, "kubernetes-cluster.ts")
        ).benchKubernetesClusterApproval(3, 100),
        ["approvals", "scheduledToApprovalSeconds", "lastDrainedToApprovalSeconds"],
      ),
  },
  {
    name: "kubernetes idle RSS with and without the action (30 s)",
    run: async (root) =>
      pick(await (await benchModule<KubernetesDrain>(root, "kubernetes-drain.ts")).benchKubernetesIdleRss(30), [
        "withoutActionRssMb",
        "withActionRssMb",
        "ratio",
      ]),
  },
  {
    name: "kubernetes notice to taint and cordon, 200 ms polling (20 notices)",
    run: async (root) =>
      pick(await (await benchModule<KubernetesDrain>(root, "kubernetes-drain.ts")).benchKubernetesCordonLatency(20), [
        "p50Ms",
        "p99Ms",
      ]),
  },
];

/** The line a child prints its figures on. */
const figuresPrefix = "side-by-side figures: ";

function pick<T extends object>(result: T, keys: ReadonlyArray<keyof T & string>): Record<string, number> {
  return Object.fromEntries(keys.map((key) => [key, Number(result[key])]));
}

const { values } = parseArgs({
  options: {
    before: { type: "string" },
    rounds: { type: "string", default: "1" },
    only: { type: "string" },
    one: { type: "string" },
    root: { type: "string" },
  },
});

if (values.one !== undefined && values.root !== undefined) {
  // A child: one bench of one tree, its figures on the last line of stdout.
  const bench = benches.find((b) => b.name === values.one);
  if (bench === undefined) throw new Error(`no bench named ${values.one}`);
  console.log(`${figuresPrefix}${JSON.stringify(await bench.run(values.root))}`);
  process.exit(0);
}

/**
 * Runs one bench of one tree in a process of its own (this script with `--one`, the same Node flags and loader): two
 * trees' modules in one process share the engine's inline caches and the heap, which skewed the Event Hubs drains.
 */
async function runAlone(bench: Bench, root: string): Promise<Record<string, number>> {
  const child = spawn(
    process.execPath,
    [...process.execArgv, import.meta.filename, "--one", bench.name, "--root", root],
    {
      cwd: root,
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  let out = "";
  child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
  const [code] = (await once(child, "exit")) as [number | null];
  const line = out.split("\n").find((l) => l.startsWith(figuresPrefix));
  if (code !== 0 || line === undefined) throw new Error(`${bench.name} (${root}) ended ${code}: ${out.slice(-2000)}`);
  return JSON.parse(line.slice(figuresPrefix.length)) as Record<string, number>;
}

if (values.before === undefined) {
  console.error("usage: npx tsx test/bench/side-by-side.ts --before DIR [--rounds N] [--only WORD]");
  process.exit(2);
}
const trees: readonly Tree[] = [
  { label: "before", root: resolve(values.before) },
  { label: "now", root: resolve(import.meta.dirname, "../..") },
];
const rounds = Math.max(1, Number(values.rounds));
const results: Array<{ bench: string; round: number; tree: string; figures: Record<string, number> }> = [];
for (const bench of benches.filter((b) => values.only === undefined || b.name.includes(values.only))) {
  for (let round = 1; round <= rounds; round++) {
    // Alternate which tree goes first, so neither always runs on the warmer machine.
    const order = round % 2 === 1 ? trees : [...trees].reverse();
    for (const tree of order) {
      const figures = await runAlone(bench, tree.root);
      results.push({ bench: bench.name, round, tree: tree.label, figures });
      console.log(`${bench.name} · round ${round} · ${tree.label}: ${JSON.stringify(figures)}`);
    }
  }
}
writeFileSync(
  "bench-side-by-side.json",
  JSON.stringify({ at: new Date().toISOString(), trees, results }, null, 2) + "\n",
);
console.log("written to bench-side-by-side.json");
process.exit(0);
