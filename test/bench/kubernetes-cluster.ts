// The kubernetes action on several nodes of one cluster, as the packages ship it (the esbuild bundle, the launcher's V8
// flags): one agent per node, each its own VM to the IMDS simulator, one Reboot naming every node: seconds from the
// notice to the one approval (given by the first node once every node has drained), the slowest node's drain, and the
// time from the last node's drained mark to the approval (what the multi-node gate adds).
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Simulator } from "../../src/testbed/simulator/server.js";
import { startKubernetesPeer, type KubernetesPeer } from "../../src/testbed/peers/kubernetes/index.js";
import type { ClusterNode } from "../helpers/kubernetes-node.js";
import { launcherRunFlags, readJsonl, runCli, waitUntil, type RunningProcess } from "../helpers/agent-process.js";
import { podsOn, scaleSetNodes, sefPodOf, startScaleSetSimulator, vmNames } from "../helpers/kubernetes-cluster.js";
import { waitForKubernetesReady } from "../helpers/kubernetes-node.js";
import type { KubernetesRecord, SefRecord } from "../../src/contract/record.js";
import { bundledAgent } from "./kubernetes-drain.js";

export interface KubernetesClusterResult {
  nodes: number;
  podsPerNode: number;
  evicted: number;
  /** StartRequests POSTs the simulator received for the event (one expected). */
  approvals: number;
  scheduledToApprovalSeconds: number;
  /** The longest of the nodes' drains (their Drained records). */
  slowestDrainSeconds: number;
  /** From the last node's drained mark (its node write) to the approval. */
  lastDrainedToApprovalSeconds: number;
}

/** One node's agent, bundled, with the packaged settings (1 s polls) and the drain at once. */
function startNodeAgent(
  sim: Simulator,
  peer: KubernetesPeer,
  member: ClusterNode,
  cli: string,
): { agent: RunningProcess; records: () => SefRecord[] } {
  const dir = mkdtempSync(join(tmpdir(), "sef-bench-k8s-cluster-"));
  const out = join(dir, "records.jsonl");
  const kubernetes = {
    nodeName: member.node.name,
    kubeconfig: peer.kubeconfigPath,
    drainLeadMs: 900_000,
    deadlineReserveMs: 5_000,
  };
  const config = {
    imdsUrl: sim.url,
    imdsExtraHeaders: { "X-Sef-Sim-Vm": member.vmName },
    pollIntervalMs: 1000,
    dataDir: join(dir, "data"),
    sinks: [`jsonl:${out}`],
    heartbeatIntervalMs: 0,
    logLevel: "info",
    metricsPort: 0,
    kubernetes,
  };
  writeFileSync(join(dir, "config.json"), JSON.stringify(config));
  const self = sefPodOf(member.node.name);
  const agent = runCli(["run", "--config", join(dir, "config.json")], {
    env: { POD_NAME: self.name, POD_NAMESPACE: self.namespace },
    nodeFlags: launcherRunFlags(),
    cli,
  });
  return { agent, records: () => readJsonl<SefRecord>(out) };
}

export async function benchKubernetesClusterApproval(
  nodeCount = 3,
  podsPerNode = 100,
): Promise<KubernetesClusterResult> {
  const bundle = await bundledAgent();
  const sim = await startScaleSetSimulator();
  const members = scaleSetNodes(sim, nodeCount);
  const peer = await startKubernetesPeer({
    seed: {
      nodes: members.map((m) => m.node),
      pods: members.flatMap((m) => podsOn(m.node.name, podsPerNode, { stopsAfterSeconds: 1 })),
    },
  });
  const agents = members.map((m) => startNodeAgent(sim, peer, m, bundle.cli));
  const id = "BE0C8000-0000-4000-8000-000000000300";
  try {
    for (const { agent } of agents) await waitForKubernetesReady(agent);
    await new Promise((r) => setTimeout(r, 2_000));
    const { changedAtMs } = sim.setEvents([
      { EventId: id, EventType: "Reboot", Resources: vmNames(nodeCount), notBeforeInSeconds: 900, autoStart: false },
    ]);
    await waitUntil(() => sim.status().approvals.length > 0, 600_000, "the approval");
    await new Promise((r) => setTimeout(r, 3_000)); // a second approval, if any node sent one, would arrive by now
    const approvedAtMs = sim.status().approvals[0]!.atMs;
    const drainedMs = members.map(
      (m) =>
        peer.state
          .nodeWrites()
          .find(
            (w) =>
              w.node === m.node.name &&
              w.cordoned === undefined &&
              w.annotationsSet.includes(`event.sef.azure.com/${id}`),
          )?.atMs ?? NaN,
    );
    const drains = agents.map(
      ({ records }) =>
        records().find((r): r is KubernetesRecord => r.RecordType === "Kubernetes" && r.Outcome === "Drained")
          ?.ElapsedMs ?? NaN,
    );
    const seconds = (ms: number): number => Math.round(ms / 100) / 10;
    return {
      nodes: nodeCount,
      podsPerNode,
      evicted: peer.state.evictions().filter((e) => e.outcome === "evicted").length,
      approvals: sim.status().approvals.reduce((n, a) => n + (a.EventId === id ? 1 : 0), 0),
      scheduledToApprovalSeconds: seconds(approvedAtMs - changedAtMs),
      slowestDrainSeconds: seconds(Math.max(...drains)),
      lastDrainedToApprovalSeconds: seconds(approvedAtMs - Math.max(...drainedMs)),
    };
  } finally {
    await Promise.all(agents.map(({ agent }) => agent.stop("SIGTERM")));
    await peer.close();
    await sim.close();
    bundle.remove();
  }
}
