// A Kubernetes node for the built-agent tests of the kubernetes action: the local Kubernetes API peer seeded with this
// simulator VM's node (providerID = the VM's resource id) and its pods, and the agent's config pointing at both.
import { mkdtempSync, writeFileSync } from "node:fs";
import { request } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { computeFor } from "../../src/testbed/simulator/compute.js";
import type { Simulator } from "../../src/testbed/simulator/server.js";
import {
  azureNodeSeed,
  startKubernetesPeer,
  type KubernetesPeer,
  type NodeSeed,
  type PodSeed,
  type KubernetesSeed,
} from "../../src/testbed/peers/kubernetes/index.js";
import type { KubeObject } from "../../src/testbed/peers/kubernetes/index.js";
import { readJsonl, runCli, waitUntil, type RunningProcess } from "./agent-process.js";
import type { KubernetesRecord, SefRecord } from "../../src/contract/record.js";

export const nodeName = "aks-nodepool1-0";
export const selfPod = { namespace: "sef-system", name: "sef-abcde" };

/** The simulator VM's Azure providerID, as the cloud provider sets it on the Node. */
export function providerIdOf(sim: Simulator, vmName = sim.scenario.vm.name): string {
  return `azure://${computeFor(sim.scenario.vm, vmName).resourceId}`;
}

/** A node of a multi-node cluster and the simulator VM behind it (the agent's `X-Sef-Sim-Vm` and NODE_NAME). */
export interface ClusterNode {
  /** The VM name IMDS serves as compute.name (what an event's Resources list). */
  readonly vmName: string;
  /** The VM's compute.resourceId as the simulator serves it. */
  readonly resourceId: string;
  /** The node as AKS registers it: name, and providerID from the resource id (resource group in lower case). */
  readonly node: NodeSeed;
}

/**
 * Nodes of one cluster for simulator VMs `vmNames` (each agent asks IMDS with `X-Sef-Sim-Vm: <vmName>`). A scenario
 * VM with a vmScaleSetName gives VMSS Uniform instances (`<set>_<n>` → `.../virtualMachineScaleSets/<set>/
 * virtualMachines/<n>`, node `<set>00000n`); without one, VMs by name (`.../virtualMachines/<name>`, as VMSS Flex and
 * standalone VMs are). `extra` adds labels, taints, ... to every node.
 */
export function clusterNodes(
  sim: Simulator,
  vmNames: readonly string[],
  extra: Omit<NodeSeed, "name" | "providerID"> = {},
): ClusterNode[] {
  return vmNames.map((vmName) => {
    const resourceId = computeFor(sim.scenario.vm, vmName).resourceId;
    return { vmName, resourceId, node: azureNodeSeed(resourceId, extra) };
  });
}

/**
 * `count` pods on the node: 2 DaemonSet pods (one of them sef's own), one pod `db-0` behind a PodDisruptionBudget
 * (maxUnavailable 1) held at zero disruptions for `pdbBlockMs`, and plain ReplicaSet pods that stop within a second.
 */
export function nodePods(
  count: number,
  options: { graceSeconds?: number; stopsAfterSeconds?: number } = {},
): PodSeed[] {
  const pods: PodSeed[] = [
    {
      namespace: selfPod.namespace,
      name: selfPod.name,
      nodeName,
      ownerReferences: [{ kind: "DaemonSet", name: "sef" }],
    },
    {
      namespace: "kube-system",
      name: "kube-proxy-x1",
      nodeName,
      ownerReferences: [{ kind: "DaemonSet", name: "kube-proxy" }],
    },
    {
      namespace: "apps",
      name: "db-0",
      nodeName,
      labels: { app: "db" },
      ownerReferences: [{ kind: "StatefulSet", name: "db" }],
      stopsAfterSeconds: 1,
    },
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
    nodes: [
      {
        name: nodeName,
        providerID: options.providerID ?? providerIdOf(sim),
        ...(options.unschedulable ? { unschedulable: true } : {}),
      },
    ],
    pods,
    ...(options.pdbBlockMs !== undefined
      ? {
          podDisruptionBudgets: [
            {
              namespace: "apps",
              name: "db",
              matchLabels: { app: "db" },
              maxUnavailable: 1,
              blockForMs: options.pdbBlockMs,
            },
          ],
        }
      : {}),
  };
  return startKubernetesPeer({ seed });
}

export interface KubeAgent {
  /** The agent's data directory (removing it is what a reimage does; its sef.db for test/helpers/ledger-probe.ts). */
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
  const dataDir = join(dir, "data");
  writeFileSync(
    configPath,
    JSON.stringify({
      imdsUrl: sim.url,
      pollIntervalMs: 200,
      dataDir,
      sinks: [`jsonl:${out}`],
      heartbeatIntervalMs: 0,
      metricsPort: 0,
      kubernetes: {
        nodeName,
        kubeconfig: peer.kubeconfigPath,
        deadlineReserveMs: 2_000,
        pdbRetryInitialMs: 250,
        pdbRetryMaxMs: 1_000,
        podPollMs: 200,
        ...kubernetes,
      },
      ...config,
    }),
  );
  const records = (): SefRecord[] => readJsonl<SefRecord>(out);
  return {
    dataDir,
    start: () =>
      runCli(["run", "--config", configPath], {
        env: { POD_NAME: selfPod.name, POD_NAMESPACE: selfPod.namespace, NODE_NAME: "", ...env },
      }),
    records,
    kubernetesRecords: () => records().filter((r): r is KubernetesRecord => r.RecordType === "Kubernetes"),
  };
}

/** The end of a test: every agent killed (if still running), then the peer and the simulator closed. */
export async function tearDown(
  agents: ReadonlyArray<RunningProcess | undefined>,
  peer: KubernetesPeer,
  sim: Simulator,
): Promise<void> {
  for (const agent of agents) await agent?.stop("SIGKILL");
  await peer.close();
  await sim.close();
}

/** Waits until the agent polls and its kubernetes action has loaded the client (seconds on a loaded machine). */
export async function waitForKubernetesReady(agent: RunningProcess, timeoutMs = 90_000): Promise<void> {
  await waitUntil(
    () => agent.stderr().includes("the kubernetes action is ready"),
    timeoutMs,
    "the kubernetes action to load its client",
  ).catch((err: unknown) => {
    throw new Error(`${String(err)}\n${agent.stderr().slice(-2000)}`);
  });
}

export const nodeSpec = (node: KubeObject | undefined) =>
  (node?.spec ?? {}) as { unschedulable?: boolean; taints?: Array<{ key: string; value?: string; effect: string }> };

/** What sef may leave on a node: whether it is cordoned, its taints, and the names of sef's annotations (`event.sef.azure.com/<EventId>`, and the previous release's `sef.azure.com/…`). */
export function sefMarksOn(node: KubeObject | undefined): {
  cordoned: boolean;
  taints: unknown[];
  sefAnnotations: string[];
} {
  return {
    cordoned: nodeSpec(node).unschedulable === true,
    taints: nodeSpec(node).taints ?? [],
    sefAnnotations: Object.keys(node?.metadata.annotations ?? {}).filter(
      (k) => k.startsWith("sef.azure.com/") || k.startsWith("event.sef.azure.com/"),
    ),
  };
}

/** The JSON of sef's mark for an event on the node (`event.sef.azure.com/<EventId>`), or undefined. */
export function sefMarkOf(node: KubeObject | undefined, eventId: string): Record<string, unknown> | undefined {
  const text = node?.metadata.annotations?.[`event.sef.azure.com/${eventId}`];
  return text === undefined ? undefined : (JSON.parse(text) as Record<string, unknown>);
}
export const eventReasons = (peer: KubernetesPeer): string[] =>
  peer.state.events().map((e) => String((e as unknown as { reason?: string }).reason));

/**
 * The peer's HTTP control API under /__peer/ (bearer token, like the API): POST `seed` adds objects and rules to the
 * running peer (pods with tolerations or already terminating, fault rules, returning-pod rules), GET `evictions`,
 * `returned-pods`, `faults` read its logs. Rejects on any answer other than 2xx, naming it.
 */
export function peerControl(
  peer: KubernetesPeer,
  method: "GET" | "POST" | "DELETE",
  path: string,
  body?: unknown,
): Promise<unknown> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  const headers = {
    authorization: `Bearer ${peer.token}`,
    ...(payload !== undefined ? { "content-type": "application/json" } : {}),
  };
  return new Promise((resolve, reject) => {
    const req = request(`${peer.url}/__peer/${path}`, { method, ca: peer.caPem, timeout: 10_000, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        const code = res.statusCode ?? 0;
        if (code >= 200 && code < 300) resolve(text === "" ? undefined : JSON.parse(text));
        else reject(new Error(`${method} /__peer/${path}: HTTP ${code}: ${text.slice(0, 300)}`));
      });
    });
    req.on("timeout", () => req.destroy(new Error(`${method} /__peer/${path}: no answer within 10 s`)));
    req.on("error", reject);
    req.end(payload);
  });
}
