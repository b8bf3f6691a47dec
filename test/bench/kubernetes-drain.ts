// The kubernetes action of the agent as the packages ship it (the esbuild bundle, run with the launcher's V8 flags):
// seconds from a Scheduled Reboot to its approval on a node of 100 pods (the local Kubernetes API peer, no
// PodDisruptionBudget holding) and the agent's peak RSS through it; the idle RSS of an agent with the action configured beside one without it (same
// simulator, same sinks, nothing scheduled); and notice → taint+cordon latency at 200 ms polling, with its breakdown.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { bundleAgent } from "../../infra/package/bundle.js";
import { startSimulator, type Simulator } from "../../src/testbed/simulator/server.js";
import type { KubernetesPeer } from "../../src/testbed/peers/kubernetes/index.js";
import {
  launcherRunFlags,
  logLines,
  readJsonl,
  runCli,
  waitUntil,
  type RunningProcess,
} from "../helpers/agent-process.js";
import {
  nodeName,
  nodePods,
  nodeSpec,
  selfPod,
  startNodePeer,
  waitForKubernetesReady,
} from "../helpers/kubernetes-node.js";
import type { KubernetesRecord, SefRecord } from "../../src/contract/record.js";
import { percentile } from "./agent-latency.js";

export interface KubernetesDrainResult {
  pods: number;
  evicted: number;
  scheduledToApprovalSeconds: number;
  drainSeconds: number;
  /** The agent's peak RSS (VmHWM) from its start through the drain and the approval: what the chart's limit must hold. */
  peakRssMb: number;
}

export interface KubernetesIdleResult {
  seconds: number;
  withoutActionRssMb: number;
  withActionRssMb: number;
  /** With / without (target ≤ 1.1, issue 44). */
  ratio: number;
  withoutActionPeakRssMb: number;
  withActionPeakRssMb: number;
}

export interface CordonLatencyResult {
  pollIntervalMs: number;
  samples: number;
  /** Simulator publishes the event → the peer has applied the taint+cordon patch. */
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** The first notice after the agent started (also among the samples). */
  firstMs: number;
  /** The last notice, sent after the idle kept-alive connection was closed (a new TLS connection; among the samples). */
  afterIdleMs: number;
  /** Target: the poll interval + 50 ms, as detection (issue 44). */
  targetMs: number;
  /** Medians of each leg, ms: publish → the poll that saw it, → the agent's commit, → the Node GET, → the PATCH. */
  breakdownP50Ms: { poll: number; commit: number; read: number; patch: number };
}

/**
 * The agent bundled as the packages ship it (sef.mjs and its chunks), in a temp dir; `remove` deletes it. `repoRoot`:
 * another tree's sources (an A/B against an older commit: `git archive <commit> src | tar -x -C <dir>`, node_modules linked).
 */
export async function bundledAgent(
  repoRoot = resolve(import.meta.dirname, "../.."),
): Promise<{ cli: string; remove: () => void }> {
  const dir = mkdtempSync(join(tmpdir(), "sef-bench-k8s-bundle-"));
  await bundleAgent(repoRoot, dir, "0.0.0-bench");
  return { cli: join(dir, "sef.mjs"), remove: () => rmSync(dir, { recursive: true, force: true }) };
}

function startAgent(
  sim: Simulator,
  peer: KubernetesPeer | undefined,
  cli: string,
  pollIntervalMs = 1000,
): { agent: RunningProcess; records: () => SefRecord[] } {
  const dir = mkdtempSync(join(tmpdir(), "sef-bench-k8s-"));
  const out = join(dir, "records.jsonl");
  const config = {
    imdsUrl: sim.url,
    pollIntervalMs,
    dataDir: join(dir, "data"),
    sinks: [`jsonl:${out}`],
    heartbeatIntervalMs: 0,
    logLevel: "info",
    metricsPort: 0,
    ...(peer
      ? { kubernetes: { nodeName, kubeconfig: peer.kubeconfigPath, drainLeadMs: 900_000, deadlineReserveMs: 5_000 } }
      : {}),
  };
  writeFileSync(join(dir, "config.json"), JSON.stringify(config));
  const agent = runCli(["run", "--config", join(dir, "config.json")], {
    env: { POD_NAME: selfPod.name, POD_NAMESPACE: selfPod.namespace },
    nodeFlags: launcherRunFlags(),
    cli,
  });
  return { agent, records: () => readJsonl<SefRecord>(out) };
}

export async function benchKubernetesDrain(podCount = 100): Promise<KubernetesDrainResult> {
  const bundle = await bundledAgent();
  const sim = await startSimulator({ scenario: "idle" });
  const peer = await startNodePeer(sim, nodePods(podCount, { stopsAfterSeconds: 1 }));
  const { agent, records } = startAgent(sim, peer, bundle.cli);
  try {
    await waitForKubernetesReady(agent);
    await new Promise((r) => setTimeout(r, 2_000));
    const { changedAtMs } = sim.setEvents([
      {
        EventId: "BE0C8000-0000-4000-8000-000000000100",
        EventType: "Reboot",
        Resources: ["WestNO_0"],
        notBeforeInSeconds: 900,
        autoStart: false,
      },
    ]);
    await waitUntil(() => sim.status().approvals.length > 0, 300_000, "the approval");
    const approvedAtMs = sim.status().approvals[0]!.atMs;
    const drained = records().find(
      (r): r is KubernetesRecord => r.RecordType === "Kubernetes" && r.Outcome === "Drained",
    );
    return {
      pods: podCount,
      evicted: peer.state.evictions().filter((e) => e.outcome === "evicted").length,
      scheduledToApprovalSeconds: Math.round((approvedAtMs - changedAtMs) / 100) / 10,
      drainSeconds: Math.round((drained?.ElapsedMs ?? NaN) / 100) / 10,
      peakRssMb: Math.round(rssKb(agent.child.pid!, "VmHWM") / 102.4) / 10,
    };
  } finally {
    await agent.stop("SIGTERM");
    await peer.close();
    await sim.close();
    bundle.remove();
  }
}

function rssKb(pid: number, field: "VmRSS" | "VmHWM"): number {
  const match = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return match ? Number(match[1]) : NaN;
}

/** Both bundled agents idle side by side for `seconds` after start-up (the action's client loaded); RSS read at the end. */
export async function benchKubernetesIdleRss(seconds = 30, repoRoot?: string): Promise<KubernetesIdleResult> {
  const bundle = await bundledAgent(repoRoot);
  const sim = await startSimulator({ scenario: "idle" });
  const peer = await startNodePeer(sim, nodePods(20));
  const without = startAgent(sim, undefined, bundle.cli);
  const withAction = startAgent(sim, peer, bundle.cli);
  try {
    await waitForKubernetesReady(withAction.agent);
    await new Promise((r) => setTimeout(r, seconds * 1000));
    const mb = (kb: number): number => Math.round(kb / 102.4) / 10;
    const [withoutKb, withKb] = [rssKb(without.agent.child.pid!, "VmRSS"), rssKb(withAction.agent.child.pid!, "VmRSS")];
    return {
      seconds,
      withoutActionRssMb: mb(withoutKb),
      withActionRssMb: mb(withKb),
      ratio: Math.round((withKb / withoutKb) * 100) / 100,
      withoutActionPeakRssMb: mb(rssKb(without.agent.child.pid!, "VmHWM")),
      withActionPeakRssMb: mb(rssKb(withAction.agent.child.pid!, "VmHWM")),
    };
  } finally {
    await Promise.all([without.agent.stop("SIGTERM"), withAction.agent.stop("SIGTERM")]);
    await peer.close();
    await sim.close();
    bundle.remove();
  }
}

/** Longer than the peer's keep-alive timeout (Node's default 5 s): the agent's idle connection is gone. */
const idleConnectionClosedMs = 7_000;

interface CordonSample {
  totalMs: number;
  poll: number;
  commit: number;
  read: number;
  patch: number;
}

/**
 * `samples` Scheduled Reboots one after another (each taken back before the next), published anywhere in the poll
 * cycle: the time from the simulator's publishing to the peer applying the taint+cordon PATCH, and where it went.
 */
export async function benchKubernetesCordonLatency(
  samples = 20,
  pollIntervalMs = 200,
  repoRoot?: string,
): Promise<CordonLatencyResult> {
  const bundle = await bundledAgent(repoRoot);
  const sim = await startSimulator({ scenario: "idle" });
  const peer = await startNodePeer(sim, nodePods(20));
  const { agent } = startAgent(sim, peer, bundle.cli, pollIntervalMs);
  const taken: CordonSample[] = [];
  try {
    await waitForKubernetesReady(agent);
    await new Promise((r) => setTimeout(r, 2_000));
    for (let i = 0; i < samples; i++) {
      // Anywhere in the poll cycle; the last one after the peer has closed the idle connection (Node's 5 s keep-alive
      // timeout), so a notice that needs a new TLS connection is among the samples too.
      const idleMs = i === samples - 1 ? idleConnectionClosedMs : 0;
      await new Promise((r) => setTimeout(r, idleMs + Math.random() * pollIntervalMs));
      taken.push(await oneCordon(sim, peer, agent, `BE0C8000-0000-4000-8000-${String(i).padStart(12, "0")}`));
      sim.setEvents([]);
      await waitUntil(() => nodeSpec(peer.state.node(nodeName)).unschedulable !== true, 30_000, "the undo");
      await new Promise((r) => setTimeout(r, 500));
    }
  } finally {
    await agent.stop("SIGTERM");
    await peer.close();
    await sim.close();
    bundle.remove();
  }
  const p50 = (pick: (s: CordonSample) => number): number => percentile(taken.map(pick), 50);
  return {
    pollIntervalMs,
    samples: taken.length,
    p50Ms: p50((s) => s.totalMs),
    p99Ms: percentile(
      taken.map((s) => s.totalMs),
      99,
    ),
    maxMs: Math.max(...taken.map((s) => s.totalMs)),
    firstMs: taken[0]?.totalMs ?? NaN,
    afterIdleMs: taken.at(-1)?.totalMs ?? NaN,
    targetMs: pollIntervalMs + 50,
    breakdownP50Ms: {
      poll: p50((s) => s.poll),
      commit: p50((s) => s.commit),
      read: p50((s) => s.read),
      patch: p50((s) => s.patch),
    },
  };
}

/** Publishes one event and reads the timestamps of its way to the Node: simulator, agent log, peer request log. */
async function oneCordon(
  sim: Simulator,
  peer: KubernetesPeer,
  agent: RunningProcess,
  eventId: string,
): Promise<CordonSample> {
  const logFrom = agent.stderr().length;
  const requestsFrom = peer.state.requests().length;
  const { changedAtMs } = sim.setEvents([
    { EventId: eventId, EventType: "Reboot", Resources: ["WestNO_0"], notBeforeInSeconds: 900, autoStart: false },
  ]);
  const patched = () =>
    peer.state
      .requests()
      .slice(requestsFrom)
      .find((r) => r.method === "PATCH" && r.path.startsWith("/api/v1/nodes/"));
  await waitUntil(
    () => patched() !== undefined && nodeSpec(peer.state.node(nodeName)).unschedulable === true,
    30_000,
    "the taint and cordon",
  );
  const requests = peer.state.requests().slice(requestsFrom);
  const read = requests.find((r) => r.method === "GET" && r.path.startsWith("/api/v1/nodes/"))?.atMs ?? NaN;
  const patch = patched()!.atMs;
  const poll = sim.requestLog().find((r) => r.atMs >= changedAtMs && r.path.includes("scheduledevents"))?.atMs ?? NaN;
  await waitUntil(
    () => logLines(agent.stderr().slice(logFrom)).some((l) => /transitions recorded/.test(String(l.msg))),
    10_000,
    "the commit's log line",
  );
  const commit = Number(
    logLines(agent.stderr().slice(logFrom)).find((l) => /transitions recorded/.test(String(l.msg)))?.time ?? NaN,
  );
  return {
    totalMs: patch - changedAtMs,
    poll: poll - changedAtMs,
    commit: commit - poll,
    read: read - commit,
    patch: patch - read,
  };
}
