// The peer's cluster state: one collection per resource, the cluster-wide resourceVersion counter, uids and
// timestamps, implicit namespaces, and the logs tests read back (evictions). Handlers and the seeding API both go
// through it; everything handed out is a copy.
import { randomUUID } from "node:crypto";
import { copyOf, kubeTime, withoutEmptyFields, type KubeObject, type NewKubeObject } from "./objects.js";

export type ResourceKind = "nodes" | "pods" | "daemonsets" | "poddisruptionbudgets" | "events";

export interface EvictionRecord {
  /** Wall-clock time of the request (epoch ms). */
  readonly atMs: number;
  readonly namespace: string;
  readonly pod: string;
  /** evicted: deletion began; blocked: 429 from a budget; not-found: 404; refused: any other error. */
  readonly outcome: "evicted" | "blocked" | "not-found" | "refused";
  readonly code: number;
  readonly budget?: string;
  readonly gracePeriodSeconds?: number;
  readonly dryRun?: boolean;
}

export interface StoreClock {
  /** Wall clock (epoch ms): stamps objects only. */
  wallNowMs(): number;
  /** Monotonic ms: budget blocks and intervals. */
  monotonicNowMs(): number;
}

export const systemClock: StoreClock = { wallNowMs: () => Date.now(), monotonicNowMs: () => performance.now() };

const builtInNamespaces = ["default", "kube-system", "kube-public", "kube-node-lease"];

export function objectKey(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

export class ClusterStore {
  private resourceVersion = 1000;
  private readonly collections = new Map<ResourceKind, Map<string, KubeObject>>();
  private readonly namespaceCreated = new Map<string, string>();
  readonly evictions: EvictionRecord[] = [];

  constructor(readonly clock: StoreClock = systemClock) {
    for (const namespace of builtInNamespaces) this.ensureNamespace(namespace);
  }

  /** The cluster's current resourceVersion (what lists report). */
  currentResourceVersion(): string {
    return String(this.resourceVersion);
  }

  nowIso(): string {
    return kubeTime(this.clock.wallNowMs());
  }

  ensureNamespace(namespace: string): void {
    if (!this.namespaceCreated.has(namespace)) this.namespaceCreated.set(namespace, this.nowIso());
  }

  hasNamespace(namespace: string): boolean {
    return this.namespaceCreated.has(namespace);
  }

  namespaces(): Array<{ name: string; creationTimestamp: string }> {
    return [...this.namespaceCreated].map(([name, creationTimestamp]) => ({ name, creationTimestamp })).sort((a, b) => a.name.localeCompare(b.name));
  }

  private collection(kind: ResourceKind): Map<string, KubeObject> {
    let found = this.collections.get(kind);
    if (!found) {
      found = new Map();
      this.collections.set(kind, found);
    }
    return found;
  }

  /** Stores a new object, filling uid, resourceVersion and creationTimestamp; returns a copy of what was stored. */
  create(kind: ResourceKind, object: NewKubeObject): KubeObject {
    const stored = withoutEmptyFields(copyOf(object) as KubeObject);
    stored.metadata.uid = stored.metadata.uid ?? randomUUID();
    stored.metadata.creationTimestamp = stored.metadata.creationTimestamp ?? this.nowIso();
    stored.metadata.resourceVersion = String(++this.resourceVersion);
    if (stored.metadata.namespace) this.ensureNamespace(stored.metadata.namespace);
    this.collection(kind).set(objectKey(stored.metadata.namespace, stored.metadata.name), stored);
    return copyOf(stored);
  }

  get(kind: ResourceKind, namespace: string | undefined, name: string): KubeObject | undefined {
    const found = this.collection(kind).get(objectKey(namespace, name));
    return found ? copyOf(found) : undefined;
  }

  /** Objects of a kind, in one namespace or all, ordered by namespace then name (as etcd lists them). */
  list(kind: ResourceKind, namespace?: string): KubeObject[] {
    const all = [...this.collection(kind).values()].filter((o) => namespace === undefined || o.metadata.namespace === namespace);
    return all.map((o) => copyOf(o)).sort((a, b) => objectKey(a.metadata.namespace, a.metadata.name).localeCompare(objectKey(b.metadata.namespace, b.metadata.name)));
  }

  /** Replaces a stored object (identity fields kept from the stored one) and bumps its resourceVersion. */
  replace(kind: ResourceKind, object: KubeObject): KubeObject {
    const key = objectKey(object.metadata.namespace, object.metadata.name);
    const current = this.collection(kind).get(key);
    if (!current) throw new Error(`${kind} ${key} does not exist`);
    const stored = withoutEmptyFields(copyOf(object));
    stored.metadata.uid = current.metadata.uid;
    stored.metadata.creationTimestamp = current.metadata.creationTimestamp;
    stored.metadata.resourceVersion = String(++this.resourceVersion);
    this.collection(kind).set(key, stored);
    return copyOf(stored);
  }

  remove(kind: ResourceKind, namespace: string | undefined, name: string): boolean {
    const removed = this.collection(kind).delete(objectKey(namespace, name));
    if (removed) this.resourceVersion++;
    return removed;
  }
}
