// Several nodes of one AKS-like cluster for the built-agent tests and the bench of the kubernetes action: one IMDS
// simulator serving VMSS Uniform VMs (each agent asks as its own VM), the Kubernetes API peer seeded with their nodes
// and pods, and one agent per node (its NODE_NAME, its own pod, its own data directory).
import { startSimulator, type Simulator } from "../../src/testbed/simulator/index.js";
import { loadScenario } from "../../src/testbed/simulator/scenarios.js";
import type { PodSeed } from "../../src/testbed/peers/kubernetes/index.js";
import { clusterNodes, kubeAgent, type ClusterNode, type KubeAgent } from "./kubernetes-node.js";
import type { KubernetesPeer } from "../../src/testbed/peers/kubernetes/index.js";

export const scaleSet = "aks-pool1-vmss";
/** The VM names of the scale set's instances (`<scaleSet>_<n>`), as IMDS lists them in Resources. */
export const vmNames = (count: number): string[] => Array.from({ length: count }, (_, i) => `${scaleSet}_${i}`);

/** The IMDS simulator whose scenario VM is instance 0 of a VMSS Uniform scale set (any other instance by X-Sef-Sim-Vm). */
export function startScaleSetSimulator(): Promise<Simulator> {
  const idle = loadScenario("idle");
  return startSimulator({
    scenario: {
      ...idle,
      vm: { ...idle.vm, name: vmNames(1)[0]!, vmScaleSetName: scaleSet, resourceGroupName: "MC_sef_aks_norwayeast" },
    },
  });
}

/** The nodes of the cluster for the first `count` instances. */
export const scaleSetNodes = (sim: Simulator, count: number): ClusterNode[] => clusterNodes(sim, vmNames(count));

/** sef's own pod on a node (a DaemonSet pod: never evicted), as POD_NAMESPACE/POD_NAME name it. */
export const sefPodOf = (node: string): { namespace: string; name: string } => ({
  namespace: "sef-system",
  name: `sef-${node.slice(-6)}`,
});

/**
 * `count` pods on `node`: sef's own and kube-proxy (DaemonSet pods), then ReplicaSet pods `<n>-web-<i>` that stop
 * `stopsAfterSeconds` after their eviction; with `budgeted`, the first of them is `<n>-db-0` (label app=db-<n>) for a
 * PodDisruptionBudget of the test's.
 */
export function podsOn(
  node: string,
  count: number,
  options: { budgeted?: boolean; stopsAfterSeconds?: number } = {},
): PodSeed[] {
  const short = node.slice(-6);
  const pods: PodSeed[] = [
    {
      namespace: sefPodOf(node).namespace,
      name: sefPodOf(node).name,
      nodeName: node,
      ownerReferences: [{ kind: "DaemonSet", name: "sef" }],
    },
    {
      namespace: "kube-system",
      name: `kube-proxy-${short}`,
      nodeName: node,
      ownerReferences: [{ kind: "DaemonSet", name: "kube-proxy" }],
    },
  ];
  for (let i = 0; pods.length < count; i++) {
    const db = options.budgeted === true && i === 0;
    pods.push({
      namespace: "apps",
      name: db ? `${short}-db-0` : `${short}-web-${i}`,
      nodeName: node,
      labels: { app: db ? `db-${short}` : "web" },
      ownerReferences: [db ? { kind: "StatefulSet", name: `db-${short}` } : { kind: "ReplicaSet", name: "web-7d9f" }],
      terminationGracePeriodSeconds: 30,
      stopsAfterSeconds: options.stopsAfterSeconds ?? 0.5,
    });
  }
  return pods;
}

/** The agent of one node: its VM to IMDS (X-Sef-Sim-Vm), its NODE_NAME, its own pod. */
export function nodeAgent(
  sim: Simulator,
  peer: KubernetesPeer,
  member: ClusterNode,
  kubernetes: Record<string, unknown> = {},
  config: Record<string, unknown> = {},
): KubeAgent {
  const self = sefPodOf(member.node.name);
  return kubeAgent(
    sim,
    peer,
    { nodeName: member.node.name, ...kubernetes },
    { imdsExtraHeaders: { "X-Sef-Sim-Vm": member.vmName }, ...config },
    { POD_NAME: self.name, POD_NAMESPACE: self.namespace },
  );
}
