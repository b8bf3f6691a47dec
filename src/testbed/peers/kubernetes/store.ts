// The peer's cluster state: one collection per resource, the cluster-wide resourceVersion counter, uids and
// timestamps, implicit namespaces, and the change history and listeners that watches follow. Handlers and the
// seeding API both go through it; everything handed out is a copy.
import { randomUUID } from "node:crypto";
import { copyOf, kubeTime, withoutEmptyFields, type KubeObject, type NewKubeObject } from "./objects.js";

export type ResourceKind = "nodes" | "pods" | "daemonsets" | "poddisruptionbudgets" | "events" | "leases";

export interface StoreClock {
  /** Wall clock (epoch ms): stamps objects only. */
  wallNowMs(): number;
  /** Monotonic ms: budget blocks and intervals. */
  monotonicNowMs(): number;
}

/** One change to a stored object, as a watch reports it (the object as stored after the change, or when removed). */
export interface StoreChange {
  readonly kind: ResourceKind;
  readonly type: "ADDED" | "MODIFIED" | "DELETED";
  readonly object: KubeObject;
  /** For MODIFIED: the object before the change (a selector may have matched it and no longer match). */
  readonly previous?: KubeObject;
  readonly resourceVersion: number;
}

/** How many changes the store remembers for watches that resume from a resourceVersion. */
export const changeHistoryLength = 5_000;

export const systemClock: StoreClock = { wallNowMs: () => Date.now(), monotonicNowMs: () => performance.now() };

const builtInNamespaces = ["default", "kube-system", "kube-public", "kube-node-lease"];

export function objectKey(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

export class ClusterStore {
  private resourceVersion = 1000;
  private readonly collections = new Map<ResourceKind, Map<string, KubeObject>>();
  private readonly namespaceMeta = new Map<string, { uid: string; creationTimestamp: string }>();
  private readonly changes: StoreChange[] = [];
  private readonly listeners = new Set<(change: StoreChange) => void>();

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
    if (!this.namespaceMeta.has(namespace))
      this.namespaceMeta.set(namespace, { uid: randomUUID(), creationTimestamp: this.nowIso() });
  }

  hasNamespace(namespace: string): boolean {
    return this.namespaceMeta.has(namespace);
  }

  namespaces(): Array<{ name: string; uid: string; creationTimestamp: string }> {
    return [...this.namespaceMeta]
      .map(([name, meta]) => ({ name, ...meta }))
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  /** Calls `listener` with every change from now on; returns the unsubscribe function. */
  subscribe(listener: (change: StoreChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Remembered changes after `resourceVersion`, or undefined when older ones were already forgotten. */
  changesSince(resourceVersion: number): StoreChange[] | undefined {
    const oldest = this.changes[0];
    if (oldest && oldest.resourceVersion > resourceVersion + 1 && this.changes.length >= changeHistoryLength)
      return undefined;
    return this.changes.filter((change) => change.resourceVersion > resourceVersion).map((change) => copyOf(change));
  }

  private record(kind: ResourceKind, type: StoreChange["type"], object: KubeObject, previous?: KubeObject): void {
    const change: StoreChange = {
      kind,
      type,
      object: copyOf(object),
      ...(previous ? { previous: copyOf(previous) } : {}),
      resourceVersion: this.resourceVersion,
    };
    this.changes.push(change);
    if (this.changes.length > changeHistoryLength) this.changes.shift();
    for (const listener of this.listeners) listener(copyOf(change));
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
    this.record(kind, "ADDED", stored);
    return copyOf(stored);
  }

  get(kind: ResourceKind, namespace: string | undefined, name: string): KubeObject | undefined {
    const found = this.collection(kind).get(objectKey(namespace, name));
    return found ? copyOf(found) : undefined;
  }

  /** Objects of a kind, in one namespace or all, ordered by namespace then name (as etcd lists them). */
  list(kind: ResourceKind, namespace?: string): KubeObject[] {
    const all = [...this.collection(kind).values()].filter(
      (o) => namespace === undefined || o.metadata.namespace === namespace,
    );
    return all
      .map((o) => copyOf(o))
      .sort((a, b) =>
        objectKey(a.metadata.namespace, a.metadata.name).localeCompare(
          objectKey(b.metadata.namespace, b.metadata.name),
        ),
      );
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
    this.record(kind, "MODIFIED", stored, current);
    return copyOf(stored);
  }

  remove(kind: ResourceKind, namespace: string | undefined, name: string): boolean {
    const key = objectKey(namespace, name);
    const stored = this.collection(kind).get(key);
    if (!stored) return false;
    this.collection(kind).delete(key);
    stored.metadata.resourceVersion = String(++this.resourceVersion);
    this.record(kind, "DELETED", stored);
    return true;
  }
}
