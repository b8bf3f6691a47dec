// The programmatic face of the peer for tests and seed files: add nodes, DaemonSets, pods, budgets and Leases in
// short form (seed.ts), hold a budget at zero disruptions or unprocessed, inject faults, make pods come back, change
// a node, and read back what clients did: objects, events, and the request, eviction and node-write logs and stats.
import { randomUUID } from "node:crypto";
import type { Cluster } from "./api.js";
import type { FaultRule, FaultRuleState } from "./faults.js";
import { decodeLease } from "./lease-validation.js";
import type { KubeObject, OwnerReference } from "./objects.js";
import type { EvictionRecord, LeaseWriteRecord, NodeWriteRecord, PeerStats, RequestRecord } from "./peer-log.js";
import { ReturningPods, type ReturnedPodRecord, type ReturningPodsRule } from "./returning-pods.js";
import {
  daemonSetObject,
  leaseObject,
  nodeObject,
  ownerReference,
  podDisruptionBudgetObject,
  podObject,
  type DaemonSetSeed,
  type KubernetesSeed,
  type LeaseSeed,
  type NodeSeed,
  type OwnerSeed,
  type PodDisruptionBudgetSeed,
  type PodSeed,
} from "./seed.js";
import { alreadyExists } from "./status.js";

/** A duration of a seed: ms, or "forever"/Infinity. */
function durationMs(value: number | "forever"): number {
  return value === "forever" ? Number.POSITIVE_INFINITY : value;
}

export class KubernetesPeerState {
  /** Owner uids for owners the peer does not store (ReplicaSets, StatefulSets, ...), stable per owner. */
  private readonly ownerUids = new Map<string, string>();

  /** The controller-like rules that bring pods back; they create pods through `addPod`. */
  private readonly returning: ReturningPods;

  constructor(private readonly cluster: Cluster) {
    this.returning = new ReturningPods(
      cluster.store,
      (seed) => this.addPod(seed),
      () => cluster.log.now(),
    );
  }

  /** Stops the returning-pod rules' pending replacements (the peer's close does). */
  close(): void {
    this.returning.close();
  }

  /** Adds namespaces, nodes, DaemonSets, pods, budgets and Leases (in that order), then fault and returning-pod rules. */
  seed(seed: KubernetesSeed): void {
    for (const namespace of seed.namespaces ?? []) this.cluster.store.ensureNamespace(namespace);
    for (const node of seed.nodes ?? []) this.addNode(node);
    for (const daemonSet of seed.daemonSets ?? []) this.addDaemonSet(daemonSet);
    for (const pod of seed.pods ?? []) this.addPod(pod);
    for (const budget of seed.podDisruptionBudgets ?? []) this.addPodDisruptionBudget(budget);
    for (const lease of seed.leases ?? []) this.addLease(lease);
    for (const rule of seed.faults ?? []) this.injectFault(rule);
    for (const rule of seed.returningPods ?? []) this.addReturningPods(rule);
  }

  addNode(seed: NodeSeed): KubeObject {
    if (this.cluster.store.get("nodes", undefined, seed.name)) throw alreadyExists("nodes", seed.name);
    return this.cluster.store.create("nodes", nodeObject(seed, this.cluster.store.nowIso()));
  }

  addDaemonSet(seed: DaemonSetSeed): KubeObject {
    const namespace = seed.namespace ?? "default";
    if (this.cluster.store.get("daemonsets", namespace, seed.name))
      throw alreadyExists("daemonsets", seed.name, "apps");
    return this.cluster.store.create("daemonsets", daemonSetObject(seed));
  }

  private ownerUid(namespace: string, owner: OwnerSeed): string {
    if (owner.uid) return owner.uid;
    if (owner.kind === "DaemonSet") {
      const existing = this.cluster.store.get("daemonsets", namespace, owner.name);
      return (existing ?? this.addDaemonSet({ namespace, name: owner.name })).metadata.uid;
    }
    if (owner.kind === "Node")
      return this.cluster.store.get("nodes", undefined, owner.name)?.metadata.uid ?? randomUUID();
    const key = `${owner.kind}/${namespace}/${owner.name}`;
    const uid = this.ownerUids.get(key) ?? randomUUID();
    this.ownerUids.set(key, uid);
    return uid;
  }

  addPod(seed: PodSeed): KubeObject {
    const namespace = seed.namespace ?? "default";
    if (this.cluster.store.get("pods", namespace, seed.name)) throw alreadyExists("pods", seed.name);
    const owners: OwnerSeed[] = [...(seed.ownerReferences ?? [])];
    if (seed.mirror && seed.nodeName && !owners.some((o) => o.kind === "Node"))
      owners.push({ kind: "Node", name: seed.nodeName, apiVersion: "v1" });
    const references: OwnerReference[] = owners.map((owner) => ownerReference(owner, this.ownerUid(namespace, owner)));
    const pod = this.cluster.store.create(
      "pods",
      podObject({ ...seed, namespace }, references, this.cluster.store.clock.wallNowMs()),
    );
    // A pod seeded terminating has a kubelet that never finishes it, unless its stop time is given.
    this.cluster.terminator.setStopsAfterSeconds(
      namespace,
      seed.name,
      seed.stopsAfterSeconds ?? (seed.terminatingForSeconds !== undefined ? "never" : undefined),
    );
    return pod;
  }

  /**
   * The next eviction of the pod finds it replaced: as the request arrives, the pod is removed and `seed` (same
   * namespace and name) created in its place with a new uid, as a StatefulSet controller recreates a pod.
   */
  recreateBeforeNextEviction(seed: PodSeed): void {
    const namespace = seed.namespace ?? "default";
    this.cluster.evictionRaces.set(`${namespace}/${seed.name}`, () => {
      this.cluster.store.remove("pods", namespace, seed.name);
      this.addPod(seed);
    });
  }

  addPodDisruptionBudget(seed: PodDisruptionBudgetSeed): KubeObject {
    const namespace = seed.namespace ?? "default";
    if (this.cluster.store.get("poddisruptionbudgets", namespace, seed.name))
      throw alreadyExists("poddisruptionbudgets", seed.name, "policy");
    const budget = this.cluster.store.create("poddisruptionbudgets", podDisruptionBudgetObject(seed));
    if (seed.blockForMs !== undefined) this.cluster.budgets.block(namespace, seed.name, durationMs(seed.blockForMs));
    if (seed.processingForMs !== undefined)
      this.cluster.budgets.holdProcessing(namespace, seed.name, durationMs(seed.processingForMs));
    return this.cluster.budgets.withLiveStatus(budget);
  }

  /** A coordination.k8s.io/v1 Lease. */
  addLease(seed: LeaseSeed): KubeObject {
    const namespace = seed.namespace ?? "default";
    if (this.cluster.store.get("leases", namespace, seed.name))
      throw alreadyExists("leases", seed.name, "coordination.k8s.io");
    const lease = leaseObject({ ...seed, namespace });
    // As the API server would decode it: MicroTimes in UTC, a wrong type or precision refused (400).
    lease.spec = decodeLease({ spec: lease.spec }, "Ignore").lease.spec;
    return this.cluster.store.create("leases", lease);
  }

  /** Holds the budget at zero disruptions for `forMs` from now (Infinity: until `allowDisruptions`). */
  blockDisruptions(namespace: string, name: string, forMs: number): void {
    this.cluster.budgets.block(namespace, name, forMs);
  }

  /** Lifts a block: the budget's own arithmetic decides again. */
  allowDisruptions(namespace: string, name: string): void {
    this.cluster.budgets.block(namespace, name, 0);
  }

  /** The disruption controller lags on the budget for `forMs` (0 ends it): evictions it covers get 429 + Retry-After 10. */
  holdBudgetProcessing(namespace: string, name: string, forMs: number): void {
    this.cluster.budgets.holdProcessing(namespace, name, forMs);
  }

  /** Installs a fault rule (faults.ts); returns its id. */
  injectFault(rule: FaultRule): string {
    return this.cluster.faults.add(rule);
  }

  removeFault(id: string): boolean {
    return this.cluster.faults.remove(id);
  }

  clearFaults(): void {
    this.cluster.faults.clear();
  }

  /** The installed fault rules, with how many requests each has seen and answered. */
  faults(): FaultRuleState[] {
    return this.cluster.faults.list();
  }

  /** Makes matching pods come back after they are evicted or deleted (returning-pods.ts); returns the rule's id. */
  addReturningPods(rule: ReturningPodsRule): string {
    return this.returning.add(rule);
  }

  removeReturningPods(id: string): boolean {
    return this.returning.remove(id);
  }

  /** Every pod a returning-pods rule brought back, in order. */
  returnedPods(): ReturnedPodRecord[] {
    return this.returning.returned();
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
    return this.cluster.store
      .list("pods", filter.namespace)
      .filter(
        (pod) => filter.nodeName === undefined || (pod.spec as { nodeName?: string }).nodeName === filter.nodeName,
      );
  }

  podDisruptionBudget(namespace: string, name: string): KubeObject | undefined {
    const budget = this.cluster.store.get("poddisruptionbudgets", namespace, name);
    return budget ? this.cluster.budgets.withLiveStatus(budget) : undefined;
  }

  /** Events in the stored core/v1 shape (created through either API group), oldest first. */
  events(namespace?: string): KubeObject[] {
    return this.cluster.store
      .list("events", namespace)
      .sort((a, b) => Number(a.metadata.resourceVersion) - Number(b.metadata.resourceVersion));
  }

  lease(namespace: string, name: string): KubeObject | undefined {
    return this.cluster.store.get("leases", namespace, name);
  }

  leases(namespace?: string): KubeObject[] {
    return this.cluster.store.list("leases", namespace);
  }

  /** Every eviction request (the last 10,000), in order, whoever answered it (the API or a fault). */
  evictions(): EvictionRecord[] {
    return [...this.cluster.log.evictions];
  }

  /** Every request but the /__peer/ control ones (the last 10,000), in order. */
  requests(): RequestRecord[] {
    return [...this.cluster.log.requests];
  }

  /** Every PATCH or PUT that changed a node (the last 10,000), with what it changed of cordon, taints, annotations. */
  nodeWrites(): NodeWriteRecord[] {
    return [...this.cluster.log.nodeWrites];
  }

  /** Every successful Lease write (the last 10,000), in order, with the holder after it. */
  leaseWrites(): LeaseWriteRecord[] {
    return [...this.cluster.log.leaseWrites];
  }

  /** Calls `listener` at each node write, before the peer answers it (a test can kill a client between the two). */
  onNodeWrite(listener: (write: NodeWriteRecord) => void): () => void {
    return this.cluster.log.onNodeWrite(listener);
  }

  /** Counters that never roll over: requests by code, evictions per pod and per node, first marks per node. */
  stats(): PeerStats {
    return this.cluster.log.stats();
  }
}
