// A Kubernetes node for the built-agent tests of the kubernetes action: the local Kubernetes API peer seeded with this
// simulator VM's node (providerID = the VM's resource id) and its pods, and the agent's config pointing at both.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { computeFor } from "../../src/testbed/simulator/compute.js";
import type { Simulator } from "../../src/testbed/simulator/server.js";
import { startKubernetesPeer, type KubernetesPeer, type PodSeed, type KubernetesSeed } from "../../src/testbed/peers/kubernetes/index.js";
import type { KubeObject } from "../../src/testbed/peers/kubernetes/index.js";
import { readJsonl, runCli, waitUntil, type RunningProcess } from "./agent-process.js";
import type { KubernetesRecord, SefRecord } from "../../src/contract/record.js";

export const nodeName = "aks-nodepool1-0";
export const selfPod = { namespace: "sef-system", name: "sef-abcde" };

/** The simulator VM's Azure providerID, as the cloud provider sets it on the Node. */
export function providerIdOf(sim: Simulator, vmName = sim.scenario.vm.name): string {
  return `azure://${computeFor(sim.scenario.vm, vmName).resourceId}`;
}

/**
 * `count` pods on the node: 2 DaemonSet pods (one of them sef's own), one pod `db-0` behind a PodDisruptionBudget
 * (maxUnavailable 1) held at zero disruptions for `pdbBlockMs`, and plain ReplicaSet pods that stop within a second.
 */
export function nodePods(count: number, options: { graceSeconds?: number; stopsAfterSeconds?: number } = {}): PodSeed[] {
  const pods: PodSeed[] = [
    { namespace: selfPod.namespace, name: selfPod.name, nodeName, ownerReferences: [{ kind: "DaemonSet", name: "sef" }] },
    { namespace: "kube-system", name: "kube-proxy-x1", nodeName, ownerReferences: [{ kind: "DaemonSet", name: "kube-proxy" }] },
    { namespace: "apps", name: "db-0", nodeName, labels: { app: "db" }, ownerReferences: [{ kind: "StatefulSet", name: "db" }], stopsAfterSeconds: 1 },
  ];
  for (let i = pods.length; i < count; i++) {
    pods.push({
      namespace: "apps",
      name: `web-${i}`,
      nodeName,
      ownerReferences: [{ kind: "ReplicaSet", name: "web-7d9f" }],
      terminationGracePeriodSeconds: options.graceSeconds ?? 30,
      stopsAfterSeconds: options.stopsAfterSeconds ?? 0.5,
      ...(i % 5 === 0 ? { emptyDirVolumes: ["cache"] } : {}),
    });
  }
  return pods;
}

export async function startNodePeer(
  sim: Simulator,
  pods: PodSeed[],
  options: { pdbBlockMs?: number; unschedulable?: boolean; providerID?: string } = {},
): Promise<KubernetesPeer> {
  const seed: KubernetesSeed = {
    nodes: [{ name: nodeName, providerID: options.providerID ?? providerIdOf(sim), ...(options.unschedulable ? { unschedulable: true } : {}) }],
    pods,
    ...(options.pdbBlockMs !== undefined
      ? { podDisruptionBudgets: [{ namespace: "apps", name: "db", matchLabels: { app: "db" }, maxUnavailable: 1, blockForMs: options.pdbBlockMs }] }
      : {}),
  };
  return startKubernetesPeer({ seed });
}

export interface KubeAgent {
  /** The agent's data directory (its sef.db, for test/helpers/ledger-probe.ts). */
  readonly dataDir: string;
  start(): RunningProcess;
  records(): SefRecord[];
  kubernetesRecords(): KubernetesRecord[];
}

/** A built agent (`sef run`) on the simulator, with the kubernetes section pointing at the peer's kubeconfig. */
export function kubeAgent(
  sim: Simulator,
  peer: KubernetesPeer,
  kubernetes: Record<string, unknown> = {},
  config: Record<string, unknown> = {},
  env: NodeJS.ProcessEnv = {},
): KubeAgent {
  const dir = mkdtempSync(join(tmpdir(), "sef-k8s-"));
  const out = join(dir, "records.jsonl");
  const configPath = join(dir, "config.json");
  writeFileSync(
    configPath,
    JSON.stringify({
      imdsUrl: sim.url,
      pollIntervalMs: 200,
      dataDir: join(dir, "data"),
      sinks: [`jsonl:${out}`],
      heartbeatIntervalMs: 0,
      metricsPort: 0,
      kubernetes: { nodeName, kubeconfig: peer.kubeconfigPath, deadlineReserveMs: 2_000, pdbRetryInitialMs: 250, pdbRetryMaxMs: 1_000, podPollMs: 200, ...kubernetes },
      ...config,
    }),
  );
  const records = (): SefRecord[] => readJsonl<SefRecord>(out);
  return {
    dataDir: join(dir, "data"),
    start: () => runCli(["run", "--config", configPath], { env: { POD_NAME: selfPod.name, POD_NAMESPACE: selfPod.namespace, NODE_NAME: "", ...env } }),
    records,
    kubernetesRecords: () => records().filter((r): r is KubernetesRecord => r.RecordType === "Kubernetes"),
  };
}

/** Waits until the agent polls and its kubernetes action has loaded the client (seconds on a loaded machine). */
export async function waitForKubernetesReady(agent: RunningProcess, timeoutMs = 90_000): Promise<void> {
  await waitUntil(() => agent.stderr().includes("the kubernetes action is ready"), timeoutMs, "the kubernetes action to load its client").catch((err: unknown) => {
    throw new Error(`${String(err)}\n${agent.stderr().slice(-2000)}`);
  });
}

export const nodeSpec = (node: KubeObject | undefined) => (node?.spec ?? {}) as { unschedulable?: boolean; taints?: Array<{ key: string; value?: string; effect: string }> };

/** What sef may leave on a node: whether it is cordoned, its taints, and the names of sef's annotations. */
export function sefMarksOn(node: KubeObject | undefined): { cordoned: boolean; taints: unknown[]; sefAnnotations: string[] } {
  return {
    cordoned: nodeSpec(node).unschedulable === true,
    taints: nodeSpec(node).taints ?? [],
    sefAnnotations: Object.keys(node?.metadata.annotations ?? {}).filter((k) => k.startsWith("sef.azure.com/")),
  };
}
export const eventReasons = (peer: KubernetesPeer): string[] => peer.state.events().map((e) => String((e as unknown as { reason?: string }).reason));
