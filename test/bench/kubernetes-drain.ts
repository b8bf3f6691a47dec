// The kubernetes action of the built agent: seconds from a Scheduled Reboot to its approval on a node of 100 pods
// (the local Kubernetes API peer, no PodDisruptionBudget holding) and the agent's peak RSS through it, and the idle
// RSS of an agent with the action configured beside one without it (same simulator, same sinks, nothing scheduled).
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startSimulator, type Simulator } from "../../src/testbed/simulator/server.js";
import type { KubernetesPeer } from "../../src/testbed/peers/kubernetes/index.js";
import { launcherRunFlags, readJsonl, runCli, waitUntil, type RunningProcess } from "../helpers/agent-process.js";
import { nodeName, nodePods, selfPod, startNodePeer, waitForKubernetesReady } from "../helpers/kubernetes-node.js";
import type { KubernetesRecord, SefRecord } from "../../src/contract/record.js";

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
  withoutActionPeakRssMb: number;
  withActionPeakRssMb: number;
}

function startAgent(sim: Simulator, peer: KubernetesPeer | undefined): { agent: RunningProcess; records: () => SefRecord[] } {
  const dir = mkdtempSync(join(tmpdir(), "sef-bench-k8s-"));
  const out = join(dir, "records.jsonl");
  const config = {
    imdsUrl: sim.url,
    pollIntervalMs: 1000,
    dataDir: join(dir, "data"),
    sinks: [`jsonl:${out}`],
    heartbeatIntervalMs: 0,
    logLevel: "info",
    metricsPort: 0,
    ...(peer ? { kubernetes: { nodeName, kubeconfig: peer.kubeconfigPath, drainLeadMs: 900_000, deadlineReserveMs: 5_000 } } : {}),
  };
  writeFileSync(join(dir, "config.json"), JSON.stringify(config));
  const agent = runCli(["run", "--config", join(dir, "config.json")], { env: { POD_NAME: selfPod.name, POD_NAMESPACE: selfPod.namespace }, nodeFlags: launcherRunFlags() });
  return { agent, records: () => readJsonl<SefRecord>(out) };
}

export async function benchKubernetesDrain(podCount = 100): Promise<KubernetesDrainResult> {
  const sim = await startSimulator({ scenario: "idle" });
  const peer = await startNodePeer(sim, nodePods(podCount, { stopsAfterSeconds: 1 }));
  const { agent, records } = startAgent(sim, peer);
  try {
    await waitForKubernetesReady(agent);
    await new Promise((r) => setTimeout(r, 2_000));
    const { changedAtMs } = sim.setEvents([{ EventId: "BE0C8000-0000-4000-8000-000000000100", EventType: "Reboot", Resources: ["WestNO_0"], notBeforeInSeconds: 900, autoStart: false }]);
    await waitUntil(() => sim.status().approvals.length > 0, 300_000, "the approval");
    const approvedAtMs = sim.status().approvals[0]!.atMs;
    const drained = records().find((r): r is KubernetesRecord => r.RecordType === "Kubernetes" && r.Outcome === "Drained");
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
  }
}

function rssKb(pid: number, field: "VmRSS" | "VmHWM"): number {
  const match = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return match ? Number(match[1]) : NaN;
}

/** Both agents idle side by side for `seconds` after start-up (the action's client loaded); RSS read at the end. */
export async function benchKubernetesIdleRss(seconds = 30): Promise<KubernetesIdleResult> {
  const sim = await startSimulator({ scenario: "idle" });
  const peer = await startNodePeer(sim, nodePods(20));
  const without = startAgent(sim, undefined);
  const withAction = startAgent(sim, peer);
  try {
    await waitForKubernetesReady(withAction.agent);
    await new Promise((r) => setTimeout(r, seconds * 1000));
    const mb = (kb: number): number => Math.round(kb / 102.4) / 10;
    return {
      seconds,
      withoutActionRssMb: mb(rssKb(without.agent.child.pid!, "VmRSS")),
      withActionRssMb: mb(rssKb(withAction.agent.child.pid!, "VmRSS")),
      withoutActionPeakRssMb: mb(rssKb(without.agent.child.pid!, "VmHWM")),
      withActionPeakRssMb: mb(rssKb(withAction.agent.child.pid!, "VmHWM")),
    };
  } finally {
    await Promise.all([without.agent.stop("SIGTERM"), withAction.agent.stop("SIGTERM")]);
    await peer.close();
    await sim.close();
  }
}
