// The programmatic face of the peer for tests and seed files: add nodes, DaemonSets, pods and budgets in short form
// (seed.ts), hold a budget at zero disruptions for a while, change a node, and read back what clients did: objects,
// events, the eviction log and the request log.
import { randomUUID } from "node:crypto";
import type { Cluster } from "./api.js";
import type { KubeObject, OwnerReference } from "./objects.js";
import {
  daemonSetObject,
  nodeObject,
  ownerReference,
  podDisruptionBudgetObject,
  podObject,
  type DaemonSetSeed,
  type KubernetesSeed,
  type NodeSeed,
  type OwnerSeed,
  type PodDisruptionBudgetSeed,
  type PodSeed,
} from "./seed.js";
import { alreadyExists } from "./status.js";
import type { EvictionRecord } from "./store.js";

export interface RequestRecord {
  /** Wall-clock time of the request (epoch ms). */
  readonly atMs: number;
  readonly method: string;
  /** Path and query string. */
  readonly path: string;
  readonly contentType?: string;
  readonly code: number;
  readonly userAgent?: string;
}

export class KubernetesPeerState {
  /** Owner uids for owners the peer does not store (ReplicaSets, StatefulSets, ...), stable per owner. */
  private readonly ownerUids = new Map<string, string>();

  constructor(
    private readonly cluster: Cluster,
    private readonly requestLog: RequestRecord[],
  ) {}

  seed(seed: KubernetesSeed): void {
    for (const namespace of seed.namespaces ?? []) this.cluster.store.ensureNamespace(namespace);
    for (const node of seed.nodes ?? []) this.addNode(node);
    for (const daemonSet of seed.daemonSets ?? []) this.addDaemonSet(daemonSet);
    for (const pod of seed.pods ?? []) this.addPod(pod);
    for (const budget of seed.podDisruptionBudgets ?? []) this.addPodDisruptionBudget(budget);
  }

  addNode(seed: NodeSeed): KubeObject {
    if (this.cluster.store.get("nodes", undefined, seed.name)) throw alreadyExists("nodes", seed.name);
    return this.cluster.store.create("nodes", nodeObject(seed, this.cluster.store.nowIso()));
  }

  addDaemonSet(seed: DaemonSetSeed): KubeObject {
    const namespace = seed.namespace ?? "default";
    if (this.cluster.store.get("daemonsets", namespace, seed.name)) throw alreadyExists("daemonsets", seed.name, "apps");
    return this.cluster.store.create("daemonsets", daemonSetObject(seed));
  }

  private ownerUid(namespace: string, owner: OwnerSeed): string {
    if (owner.uid) return owner.uid;
    if (owner.kind === "DaemonSet") {
      const existing = this.cluster.store.get("daemonsets", namespace, owner.name);
      return (existing ?? this.addDaemonSet({ namespace, name: owner.name })).metadata.uid;
    }
    if (owner.kind === "Node") return this.cluster.store.get("nodes", undefined, owner.name)?.metadata.uid ?? randomUUID();
    const key = `${owner.kind}/${namespace}/${owner.name}`;
    const uid = this.ownerUids.get(key) ?? randomUUID();
    this.ownerUids.set(key, uid);
    return uid;
  }

  addPod(seed: PodSeed): KubeObject {
    const namespace = seed.namespace ?? "default";
    if (this.cluster.store.get("pods", namespace, seed.name)) throw alreadyExists("pods", seed.name);
    const owners: OwnerSeed[] = [...(seed.ownerReferences ?? [])];
    if (seed.mirror && seed.nodeName && !owners.some((o) => o.kind === "Node")) owners.push({ kind: "Node", name: seed.nodeName, apiVersion: "v1" });
    const references: OwnerReference[] = owners.map((owner) => ownerReference(owner, this.ownerUid(namespace, owner)));
    const pod = this.cluster.store.create("pods", podObject({ ...seed, namespace }, references, this.cluster.store.nowIso()));
    this.cluster.terminator.setStopsAfterSeconds(namespace, seed.name, seed.stopsAfterSeconds);
    return pod;
  }

  addPodDisruptionBudget(seed: PodDisruptionBudgetSeed): KubeObject {
    const namespace = seed.namespace ?? "default";
    if (this.cluster.store.get("poddisruptionbudgets", namespace, seed.name)) throw alreadyExists("poddisruptionbudgets", seed.name, "policy");
    const budget = this.cluster.store.create("poddisruptionbudgets", podDisruptionBudgetObject(seed));
    if (seed.blockForMs !== undefined) this.cluster.budgets.block(namespace, seed.name, seed.blockForMs === "forever" ? Number.POSITIVE_INFINITY : seed.blockForMs);
    return this.cluster.budgets.withLiveStatus(budget);
  }

  /** Holds the budget at zero disruptions for `forMs` from now (Infinity: until `allowDisruptions`). */
  blockDisruptions(namespace: string, name: string, forMs: number): void {
    this.cluster.budgets.block(namespace, name, forMs);
  }

  /** Lifts a block: the budget's own arithmetic decides again. */
  allowDisruptions(namespace: string, name: string): void {
    this.cluster.budgets.block(namespace, name, 0);
  }

  /** Changes a node in place (e.g. an operator's own cordon); bumps its resourceVersion. */
  updateNode(name: string, change: (node: KubeObject) => void): KubeObject {
    const node = this.cluster.store.get("nodes", undefined, name);
    if (!node) throw new Error(`node ${name} does not exist`);
    change(node);
    return this.cluster.store.replace("nodes", node);
  }

  node(name: string): KubeObject | undefined {
    return this.cluster.store.get("nodes", undefined, name);
  }

  nodes(): KubeObject[] {
    return this.cluster.store.list("nodes");
  }

  pod(namespace: string, name: string): KubeObject | undefined {
    return this.cluster.store.get("pods", namespace, name);
  }

  /** Pods, optionally only those on one node and/or in one namespace. */
  pods(filter: { nodeName?: string; namespace?: string } = {}): KubeObject[] {
    return this.cluster.store.list("pods", filter.namespace).filter((pod) => filter.nodeName === undefined || (pod.spec as { nodeName?: string }).nodeName === filter.nodeName);
  }

  podDisruptionBudget(namespace: string, name: string): KubeObject | undefined {
    const budget = this.cluster.store.get("poddisruptionbudgets", namespace, name);
    return budget ? this.cluster.budgets.withLiveStatus(budget) : undefined;
  }

  /** Events in the stored core/v1 shape (created through either API group), oldest first. */
  events(namespace?: string): KubeObject[] {
    return this.cluster.store.list("events", namespace).sort((a, b) => Number(a.metadata.resourceVersion) - Number(b.metadata.resourceVersion));
  }

  /** Every eviction request, in order. */
  evictions(): EvictionRecord[] {
    return [...this.cluster.store.evictions];
  }

  /** Every authenticated or refused request, in order. */
  requests(): RequestRecord[] {
    return [...this.requestLog];
  }
}
