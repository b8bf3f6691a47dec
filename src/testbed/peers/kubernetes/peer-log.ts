// What clients did to the peer, for tests to read back: the request log, the eviction log and the node-write log
// (each keeps its last entries), and counters that never roll over: requests by code, evictions per pod and per
// node, and the first time each node was cordoned, given each taint key and each annotation key through the API.
import type { KubeObject, Taint } from "./objects.js";

/** When something happened: wall clock (epoch ms, comparable with records' timestamps) and monotonic ms. */
export interface Stamp {
  readonly atMs: number;
  readonly monotonicMs: number;
}

export interface RequestRecord extends Stamp {
  readonly method: string;
  /** Path and query string. */
  readonly path: string;
  readonly contentType?: string;
  readonly code: number;
  readonly userAgent?: string;
  /** The Kubernetes verb (get, list, watch, create, update, patch, delete, ...) or the lower-case method. */
  readonly verb: string;
  /** "nodes", "pods/eviction", ... (resource requests only). */
  readonly resource?: string;
  readonly namespace?: string;
  readonly name?: string;
  /** The id of the fault rule that answered it instead of the API. */
  readonly fault?: string;
}

export interface EvictionRecord extends Stamp {
  readonly namespace: string;
  readonly pod: string;
  /** The node the pod was on when the eviction arrived. */
  readonly nodeName?: string;
  /**
   * evicted: 201, deletion began; blocked: 429 from a budget; throttled: 429 from a throttle fault (APF); not-found:
   * 404; refused: any other error (a 403 or 500 fault, several budgets, a failed precondition).
   */
  readonly outcome: "evicted" | "blocked" | "throttled" | "not-found" | "refused";
  readonly code: number;
  readonly budget?: string;
  readonly gracePeriodSeconds?: number;
  readonly dryRun?: boolean;
  readonly fault?: string;
}

/** One successful PATCH or PUT of a node through the API, and what it changed of the marks a drain leaves. */
export interface NodeWriteRecord extends Stamp {
  readonly node: string;
  readonly method: string;
  readonly contentType?: string;
  /** The node's resourceVersion after the write. */
  readonly resourceVersion: string;
  /** true: the write cordoned the node; false: uncordoned it; absent: left spec.unschedulable alone. */
  readonly cordoned?: boolean;
  /** Taints added and removed, as `key=value:Effect` (`key:Effect` without a value). */
  readonly taintsAdded: readonly string[];
  readonly taintsRemoved: readonly string[];
  /** Annotation keys set (added or changed) and removed. */
  readonly annotationsSet: readonly string[];
  readonly annotationsRemoved: readonly string[];
}

/** One successful write of a Lease through the API (create, PUT, PATCH, DELETE), and who held it after the write. */
export interface LeaseWriteRecord extends Stamp {
  readonly namespace: string;
  readonly name: string;
  readonly method: string;
  /** spec.holderIdentity after the write ("" when none; the Lease's last holder for a DELETE). */
  readonly holderIdentity: string;
  readonly resourceVersion: string;
}

export interface EvictionCounts {
  requests: number;
  evicted: number;
  blocked: number;
  throttled: number;
  refused: number;
  notFound: number;
}

export interface NodeMarkTimes {
  /** Node writes through the API. */
  writes: number;
  firstCordon?: Stamp;
  /** By taint key. */
  firstTaint: Record<string, Stamp>;
  /** By annotation key. */
  firstAnnotation: Record<string, Stamp>;
}

export interface PeerStats {
  readonly requests: { readonly total: number; readonly byCode: Record<string, number>; readonly faulted: number };
  /** By `namespace/pod` and by node name. */
  readonly evictions: {
    readonly byPod: Record<string, EvictionCounts>;
    readonly byNode: Record<string, EvictionCounts>;
  };
  readonly nodes: Record<string, NodeMarkTimes>;
}

/** Entries each log keeps (the oldest go first), so a long-running peer stays small. */
export const logLimit = 10_000;

function pushCapped<T>(log: T[], entry: T): void {
  if (log.length >= logLimit) log.shift();
  log.push(entry);
}

function taintLabel(taint: Taint): string {
  return `${taint.key}${taint.value ? `=${taint.value}` : ""}:${taint.effect}`;
}

function keysChanged(
  before: Record<string, string> | undefined,
  after: Record<string, string> | undefined,
): { set: string[]; removed: string[] } {
  const old = before ?? {};
  const now = after ?? {};
  return {
    set: Object.keys(now).filter((k) => old[k] !== now[k]),
    removed: Object.keys(old).filter((k) => !(k in now)),
  };
}

/** What a node write changed of cordon, taints and annotations (pure). */
export function nodeWriteChanges(
  before: KubeObject,
  after: KubeObject,
): Pick<NodeWriteRecord, "cordoned" | "taintsAdded" | "taintsRemoved" | "annotationsSet" | "annotationsRemoved"> {
  const spec = (node: KubeObject): { unschedulable?: boolean; taints?: Taint[] } =>
    (node.spec ?? {}) as { unschedulable?: boolean; taints?: Taint[] };
  const wasCordoned = spec(before).unschedulable === true;
  const isCordoned = spec(after).unschedulable === true;
  const oldTaints = (spec(before).taints ?? []).map(taintLabel);
  const newTaints = (spec(after).taints ?? []).map(taintLabel);
  const annotations = keysChanged(before.metadata.annotations, after.metadata.annotations);
  return {
    ...(wasCordoned !== isCordoned ? { cordoned: isCordoned } : {}),
    taintsAdded: newTaints.filter((t) => !oldTaints.includes(t)),
    taintsRemoved: oldTaints.filter((t) => !newTaints.includes(t)),
    annotationsSet: annotations.set,
    annotationsRemoved: annotations.removed,
  };
}

const emptyCounts = (): EvictionCounts => ({
  requests: 0,
  evicted: 0,
  blocked: 0,
  throttled: 0,
  refused: 0,
  notFound: 0,
});
const countField: Record<EvictionRecord["outcome"], keyof EvictionCounts> = {
  evicted: "evicted",
  blocked: "blocked",
  throttled: "throttled",
  refused: "refused",
  "not-found": "notFound",
};

export class PeerLog {
  readonly requests: RequestRecord[] = [];
  readonly evictions: EvictionRecord[] = [];
  readonly nodeWrites: NodeWriteRecord[] = [];
  readonly leaseWrites: LeaseWriteRecord[] = [];
  private readonly requestsByCode = new Map<number, number>();
  private requestTotal = 0;
  private faulted = 0;
  private readonly evictionsByPod = new Map<string, EvictionCounts>();
  private readonly evictionsByNode = new Map<string, EvictionCounts>();
  private readonly nodeMarks = new Map<string, NodeMarkTimes>();
  private readonly nodeWriteListeners = new Set<(write: NodeWriteRecord) => void>();

  constructor(private readonly clock: { wallNowMs(): number; monotonicNowMs(): number }) {}

  /** Calls `listener` at each node write, before the write is answered; returns how to stop. */
  onNodeWrite(listener: (write: NodeWriteRecord) => void): () => void {
    this.nodeWriteListeners.add(listener);
    return () => this.nodeWriteListeners.delete(listener);
  }

  now(): Stamp {
    return { atMs: this.clock.wallNowMs(), monotonicMs: this.clock.monotonicNowMs() };
  }

  request(entry: Omit<RequestRecord, keyof Stamp>): void {
    pushCapped(this.requests, { ...this.now(), ...entry });
    this.requestTotal++;
    if (entry.fault) this.faulted++;
    this.requestsByCode.set(entry.code, (this.requestsByCode.get(entry.code) ?? 0) + 1);
  }

  eviction(entry: Omit<EvictionRecord, keyof Stamp>): void {
    pushCapped(this.evictions, { ...this.now(), ...entry });
    const bump = (map: Map<string, EvictionCounts>, key: string): void => {
      const counts = map.get(key) ?? emptyCounts();
      counts.requests++;
      counts[countField[entry.outcome]]++;
      map.set(key, counts);
    };
    bump(this.evictionsByPod, `${entry.namespace}/${entry.pod}`);
    if (entry.nodeName) bump(this.evictionsByNode, entry.nodeName);
  }

  nodeWrite(before: KubeObject, after: KubeObject, method: string, contentType: string | undefined): void {
    const stamp = this.now();
    const changes = nodeWriteChanges(before, after);
    const node = after.metadata.name;
    const record: NodeWriteRecord = {
      ...stamp,
      node,
      method,
      ...(contentType ? { contentType } : {}),
      resourceVersion: after.metadata.resourceVersion,
      ...changes,
    };
    pushCapped(this.nodeWrites, record);
    for (const listener of this.nodeWriteListeners) listener(record);
    const marks = this.nodeMarks.get(node) ?? { writes: 0, firstTaint: {}, firstAnnotation: {} };
    marks.writes++;
    if (changes.cordoned === true && !marks.firstCordon) marks.firstCordon = stamp;
    for (const taint of changes.taintsAdded) marks.firstTaint[taint.split(/[=:]/)[0] ?? taint] ??= stamp;
    for (const key of changes.annotationsSet) marks.firstAnnotation[key] ??= stamp;
    this.nodeMarks.set(node, marks);
  }

  leaseWrite(lease: KubeObject, method: string): void {
    const holder = (lease.spec as { holderIdentity?: string } | undefined)?.holderIdentity;
    pushCapped(this.leaseWrites, {
      ...this.now(),
      namespace: lease.metadata.namespace ?? "",
      name: lease.metadata.name ?? "",
      method,
      holderIdentity: holder ?? "",
      resourceVersion: lease.metadata.resourceVersion,
    });
  }

  stats(): PeerStats {
    const record = <T>(map: Map<string, T>): Record<string, T> => structuredClone(Object.fromEntries(map));
    return {
      requests: {
        total: this.requestTotal,
        byCode: Object.fromEntries([...this.requestsByCode].map(([code, n]) => [String(code), n])),
        faulted: this.faulted,
      },
      evictions: { byPod: record(this.evictionsByPod), byNode: record(this.evictionsByNode) },
      nodes: record(this.nodeMarks),
    };
  }
}
