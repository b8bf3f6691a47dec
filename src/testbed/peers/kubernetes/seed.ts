// What tests and `--seed` files give the peer (nodes, pods, DaemonSets, PodDisruptionBudgets, Leases in short form;
// fault rules and returning-pod rules) and the pure builders that turn them into the full objects a real cluster
// would serve.
import type { FaultRule } from "./faults.js";
import {
  kubeTime,
  type NewKubeObject,
  type ObjectMeta,
  type OwnerReference,
  type Taint,
  type Toleration,
} from "./objects.js";
import type { IntOrPercent } from "./pdb.js";
import type { StopsAfter } from "./pod-lifecycle.js";

export const kubeletVersion = "v1.33.0";
/** The annotation that marks a mirror (static) pod; its value is the static pod's config hash. */
export const mirrorPodAnnotation = "kubernetes.io/config.mirror";

/** The metadata a seed gives its object (the store stamps uid, resourceVersion and creationTimestamp). */
type SeedMeta = Pick<ObjectMeta, "name" | "namespace" | "labels" | "annotations">;

export interface NodeSeed extends Omit<SeedMeta, "namespace"> {
  providerID?: string;
  taints?: Taint[];
  unschedulable?: boolean;
  /** Ready condition status (default true). */
  ready?: boolean;
}

/** An owner reference in short: kind and name; apiVersion (default v1 for a Node, else apps/v1), a uid (default: the
 * seeded owner's) and controller (default true: the owner is the pod's controller) may be given. */
export type OwnerSeed = Pick<OwnerReference, "kind" | "name"> &
  Partial<Pick<OwnerReference, "apiVersion" | "uid" | "controller">>;

export interface PodSeed extends SeedMeta {
  nodeName?: string;
  /** Owners; a DaemonSet owner also creates the DaemonSet (so `kubectl drain` finds the controller). */
  ownerReferences?: OwnerSeed[];
  /** A mirror pod of a static pod: the `kubernetes.io/config.mirror` annotation and a Node owner. */
  mirror?: boolean;
  /** Names of emptyDir volumes to give the pod. */
  emptyDirVolumes?: string[];
  /** spec.terminationGracePeriodSeconds (default 30, like the API's default). */
  terminationGracePeriodSeconds?: number;
  /**
   * How long the containers take to stop once deletion begins (default: the whole grace period); "never" (or
   * Infinity): the kubelet never confirms, the pod stays terminating until a delete with grace 0.
   */
  stopsAfterSeconds?: StopsAfter;
  /** metadata.finalizers: a deleted pod stays (terminating, then terminal) until they are removed. */
  finalizers?: string[];
  /** spec.tolerations (`[{ operator: "Exists" }]` tolerates every taint, cordon included). */
  tolerations?: Toleration[];
  /**
   * Seed the pod already terminating: its deletion began this many seconds ago with its own grace period, so more
   * than the grace period ago is "past its grace". Its kubelet never finishes it (a delete with grace 0 does).
   */
  terminatingForSeconds?: number;
  /** status.phase (default Running). */
  phase?: "Pending" | "Running" | "Succeeded" | "Failed";
  /** spec.priorityClassName and spec.priority as the priority admission plugin resolves them (default none, 0). */
  priorityClassName?: string;
  priority?: number;
  /** Ready condition (default true when Running). */
  ready?: boolean;
}

export interface PodDisruptionBudgetSeed extends Pick<SeedMeta, "name" | "namespace"> {
  matchLabels: Record<string, string>;
  minAvailable?: IntOrPercent;
  maxUnavailable?: IntOrPercent;
  /** Allow no disruption for this long after the budget is added (the testbed's control; Infinity or "forever" in a
   * JSON seed file: until allowed). */
  blockForMs?: number | "forever";
  /** The disruption controller has not processed the budget for this long: evictions get 429 with Retry-After 10. */
  processingForMs?: number | "forever";
}

/** A coordination.k8s.io/v1 Lease; times are RFC 3339 (stored as MicroTime). */
export interface LeaseSeed extends SeedMeta {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

export type DaemonSetSeed = Pick<SeedMeta, "name" | "namespace" | "labels">;

/** Pods that come back after they are deleted, as a controller's would (returning-pods.ts plays the rule). */
export interface ReturningPodsRule {
  /** Namespace of the pods (default "default"). */
  readonly namespace?: string;
  /** Pods whose labels include all of these come back. */
  readonly matchLabels: Readonly<Record<string, string>>;
  /** How long after the pod starts terminating its replacement appears (default 1000 ms). */
  readonly delayMs?: number;
  /** Replacements this rule creates at most (default: no limit). */
  readonly maxReturns?: number;
  /** The replacement's tolerations (default `[{ operator: "Exists" }]`). */
  readonly tolerations?: readonly Toleration[];
  /** The replacement's name prefix (default: the pod's controller's name, else the pod's name, then "-"). */
  readonly namePrefix?: string;
  /** The replacement's stop time once its own deletion begins (PodSeed.stopsAfterSeconds; default its grace period). */
  readonly stopsAfterSeconds?: number;
}

export interface KubernetesSeed {
  nodes?: NodeSeed[];
  daemonSets?: DaemonSetSeed[];
  pods?: PodSeed[];
  podDisruptionBudgets?: PodDisruptionBudgetSeed[];
  leases?: LeaseSeed[];
  /** Fault rules, installed in order (`forMs` counts from the seeding). */
  faults?: FaultRule[];
  /** Controller-like rules that bring evicted or deleted pods back (returning-pods.ts). */
  returningPods?: ReturningPodsRule[];
  /** Namespaces beyond default, kube-system, kube-public, kube-node-lease and those of the pods. */
  namespaces?: string[];
}

export function nodeObject(seed: NodeSeed, nowIso: string): NewKubeObject {
  const ready = seed.ready ?? true;
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name: seed.name,
      labels: {
        "kubernetes.io/hostname": seed.name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        ...seed.labels,
      },
      annotations: { "node.alpha.kubernetes.io/ttl": "0", ...seed.annotations },
    },
    spec: {
      ...(seed.providerID !== undefined ? { providerID: seed.providerID } : {}),
      ...(seed.unschedulable ? { unschedulable: true } : {}),
      ...(seed.taints && seed.taints.length > 0 ? { taints: seed.taints } : {}),
    },
    status: {
      conditions: [
        {
          type: "Ready",
          status: ready ? "True" : "False",
          reason: ready ? "KubeletReady" : "KubeletNotReady",
          message: ready ? "kubelet is posting ready status" : "kubelet stopped posting node status",
          lastHeartbeatTime: nowIso,
          lastTransitionTime: nowIso,
        },
      ],
      addresses: [{ type: "Hostname", address: seed.name }],
      nodeInfo: {
        kubeletVersion,
        kubeProxyVersion: "",
        operatingSystem: "linux",
        architecture: "amd64",
        osImage: "Ubuntu 22.04.5 LTS",
        kernelVersion: "5.15.0-1079-azure",
        containerRuntimeVersion: "containerd://1.7.27-1",
        machineID: "",
        systemUUID: "",
        bootID: "",
      },
      capacity: { cpu: "4", memory: "16374572Ki", pods: "110" },
      allocatable: { cpu: "3860m", memory: "12880172Ki", pods: "110" },
    },
  };
}

export function ownerReference(owner: OwnerSeed, uid: string): OwnerReference {
  const apiVersion = owner.apiVersion ?? (owner.kind === "Node" ? "v1" : "apps/v1");
  return {
    apiVersion,
    kind: owner.kind,
    name: owner.name,
    uid,
    controller: owner.controller ?? true,
    blockOwnerDeletion: true,
  };
}

function containerState(phase: NonNullable<PodSeed["phase"]>, nowIso: string): object {
  if (phase === "Running") return { running: { startedAt: nowIso } };
  if (phase === "Pending") return { waiting: { reason: "ContainerCreating" } };
  return {
    terminated: {
      exitCode: phase === "Succeeded" ? 0 : 1,
      reason: phase === "Succeeded" ? "Completed" : "Error",
      startedAt: nowIso,
      finishedAt: nowIso,
    },
  };
}

/** Where a seeded-terminating pod's deletion stands: started `terminatingForSeconds` ago with its grace period. */
function seededDeletion(seed: PodSeed, nowMs: number): Partial<ObjectMeta> {
  if (seed.terminatingForSeconds === undefined) return {};
  const grace = seed.terminationGracePeriodSeconds ?? 30;
  return {
    deletionTimestamp: kubeTime(nowMs - seed.terminatingForSeconds * 1000 + grace * 1000),
    deletionGracePeriodSeconds: grace,
  };
}

export function podObject(seed: PodSeed, owners: OwnerReference[], nowMs: number): NewKubeObject {
  const nowIso = kubeTime(nowMs);
  const phase = seed.phase ?? "Running";
  const ready = phase === "Running" && (seed.ready ?? true);
  const annotations = { ...seed.annotations, ...(seed.mirror ? { [mirrorPodAnnotation]: `mirror-${seed.name}` } : {}) };
  const volumes = (seed.emptyDirVolumes ?? []).map((name) => ({ name, emptyDir: {} }));
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: seed.name,
      namespace: seed.namespace ?? "default",
      ...(seed.labels ? { labels: { ...seed.labels } } : {}),
      ...(Object.keys(annotations).length > 0 ? { annotations } : {}),
      ...(owners.length > 0 ? { ownerReferences: owners } : {}),
      ...(seed.finalizers && seed.finalizers.length > 0 ? { finalizers: [...seed.finalizers] } : {}),
      ...seededDeletion(seed, nowMs),
    },
    spec: {
      ...(seed.nodeName !== undefined ? { nodeName: seed.nodeName } : {}),
      ...(seed.tolerations && seed.tolerations.length > 0 ? { tolerations: structuredClone(seed.tolerations) } : {}),
      containers: [
        {
          name: "main",
          image: "registry.k8s.io/pause:3.10",
          imagePullPolicy: "IfNotPresent",
          volumeMounts: volumes.map((v) => ({ name: v.name, mountPath: `/data/${v.name}` })),
        },
      ],
      ...(volumes.length > 0 ? { volumes } : {}),
      restartPolicy: "Always",
      terminationGracePeriodSeconds: seed.terminationGracePeriodSeconds ?? 30,
      dnsPolicy: "ClusterFirst",
      schedulerName: "default-scheduler",
      serviceAccountName: "default",
      priority: seed.priority ?? 0,
      ...(seed.priorityClassName !== undefined ? { priorityClassName: seed.priorityClassName } : {}),
      enableServiceLinks: true,
    },
    status: {
      phase,
      conditions: [
        { type: "PodScheduled", status: "True", lastProbeTime: null, lastTransitionTime: nowIso },
        { type: "Ready", status: ready ? "True" : "False", lastProbeTime: null, lastTransitionTime: nowIso },
        { type: "ContainersReady", status: ready ? "True" : "False", lastProbeTime: null, lastTransitionTime: nowIso },
      ],
      startTime: nowIso,
      containerStatuses: [
        {
          name: "main",
          ready,
          restartCount: 0,
          started: phase === "Running",
          image: "registry.k8s.io/pause:3.10",
          imageID: "",
          state: containerState(phase, nowIso),
        },
      ],
      qosClass: "BestEffort",
    },
  };
}

export function daemonSetObject(seed: DaemonSetSeed): NewKubeObject {
  const labels = seed.labels ?? { app: seed.name };
  return {
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: { name: seed.name, namespace: seed.namespace ?? "default", generation: 1, labels: { ...labels } },
    spec: {
      selector: { matchLabels: { ...labels } },
      template: {
        metadata: { labels: { ...labels } },
        spec: { containers: [{ name: "main", image: "registry.k8s.io/pause:3.10" }] },
      },
      updateStrategy: { type: "RollingUpdate" },
    },
    status: {
      currentNumberScheduled: 0,
      desiredNumberScheduled: 0,
      numberMisscheduled: 0,
      numberReady: 0,
      observedGeneration: 1,
    },
  };
}

export function leaseObject(seed: LeaseSeed): NewKubeObject {
  const spec = {
    ...(seed.holderIdentity !== undefined ? { holderIdentity: seed.holderIdentity } : {}),
    ...(seed.leaseDurationSeconds !== undefined ? { leaseDurationSeconds: seed.leaseDurationSeconds } : {}),
    ...(seed.acquireTime !== undefined ? { acquireTime: seed.acquireTime } : {}),
    ...(seed.renewTime !== undefined ? { renewTime: seed.renewTime } : {}),
    ...(seed.leaseTransitions !== undefined ? { leaseTransitions: seed.leaseTransitions } : {}),
  };
  const metadata = {
    name: seed.name,
    namespace: seed.namespace ?? "default",
    ...(seed.labels ? { labels: { ...seed.labels } } : {}),
    ...(seed.annotations ? { annotations: { ...seed.annotations } } : {}),
  };
  return { apiVersion: "coordination.k8s.io/v1", kind: "Lease", metadata, spec };
}

export function podDisruptionBudgetObject(seed: PodDisruptionBudgetSeed): NewKubeObject {
  return {
    apiVersion: "policy/v1",
    kind: "PodDisruptionBudget",
    metadata: { name: seed.name, namespace: seed.namespace ?? "default", generation: 1 },
    spec: {
      selector: { matchLabels: { ...seed.matchLabels } },
      ...(seed.minAvailable !== undefined ? { minAvailable: seed.minAvailable } : {}),
      ...(seed.maxUnavailable !== undefined ? { maxUnavailable: seed.maxUnavailable } : {}),
    },
    status: { observedGeneration: 1, disruptionsAllowed: 0, currentHealthy: 0, desiredHealthy: 0, expectedPods: 0 },
  };
}
