// Pods that come back: a controller-like rule that, when a matching pod starts terminating (evicted or deleted) or
// is removed outright, creates a replacement with a new name on the same node after a delay, tolerating every taint
// (`operator: Exists`, cordon included) as a workload without a DaemonSet that tolerates a drain's taint would.
// The replacement carries the pod's labels and owners, so it matches the rule again (bounded by maxReturns).
import { randomNameSuffix, type KubeObject, type OwnerReference } from "./objects.js";
import type { Stamp } from "./peer-log.js";
import type { PodSeed, ReturningPodsRule } from "./seed.js";

export type { ReturningPodsRule } from "./seed.js";
import type { ClusterStore, StoreChange } from "./store.js";

export interface ReturnedPodRecord extends Stamp {
  readonly rule: string;
  /** `namespace/name` of the pod that went, and of the one that came back. */
  readonly replaced: string;
  readonly pod: string;
  readonly nodeName: string;
}

/** True when a change is the moment a pod goes: its deletion begins, or it is removed without having been terminating. */
export function isDeparture(change: StoreChange): boolean {
  if (change.kind !== "pods") return false;
  if (change.type === "MODIFIED")
    return (
      change.object.metadata.deletionTimestamp !== undefined &&
      change.previous?.metadata.deletionTimestamp === undefined
    );
  return change.type === "DELETED" && change.object.metadata.deletionTimestamp === undefined;
}

/** The replacement's seed: same node, labels, owners and grace period, a new name, the rule's tolerations. */
export function replacementSeed(
  rule: ReturningPodsRule,
  pod: KubeObject,
): PodSeed & { ownerReferences: OwnerReference[] } {
  const spec = (pod.spec ?? {}) as { nodeName?: string; terminationGracePeriodSeconds?: number };
  const controller = pod.metadata.ownerReferences?.find((o) => o.controller);
  const prefix = rule.namePrefix ?? `${controller?.name ?? pod.metadata.name}-`;
  return {
    namespace: pod.metadata.namespace ?? "default",
    name: `${prefix}${randomNameSuffix()}`,
    ...(spec.nodeName !== undefined ? { nodeName: spec.nodeName } : {}),
    ...(pod.metadata.labels ? { labels: { ...pod.metadata.labels } } : {}),
    ownerReferences: (pod.metadata.ownerReferences ?? []).map((o) => ({ ...o })),
    tolerations: structuredClone([...(rule.tolerations ?? [{ operator: "Exists" }])]),
    ...(spec.terminationGracePeriodSeconds !== undefined
      ? { terminationGracePeriodSeconds: spec.terminationGracePeriodSeconds }
      : {}),
    ...(rule.stopsAfterSeconds !== undefined ? { stopsAfterSeconds: rule.stopsAfterSeconds } : {}),
  };
}

interface InstalledRule {
  readonly id: string;
  readonly rule: ReturningPodsRule;
  returns: number;
}

export class ReturningPods {
  private readonly rules: InstalledRule[] = [];
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly log: ReturnedPodRecord[] = [];
  private nextId = 1;
  private readonly unsubscribe: () => void;

  constructor(
    private readonly store: ClusterStore,
    private readonly addPod: (seed: PodSeed) => KubeObject,
    private readonly now: () => Stamp,
  ) {
    this.unsubscribe = store.subscribe((change) => this.onChange(change));
  }

  add(rule: ReturningPodsRule): string {
    if (typeof rule !== "object" || rule === null || typeof rule.matchLabels !== "object" || rule.matchLabels === null)
      throw new Error("a returning-pods rule needs matchLabels");
    const id = `returning-${this.nextId++}`;
    this.rules.push({ id, rule, returns: 0 });
    return id;
  }

  remove(id: string): boolean {
    const index = this.rules.findIndex((r) => r.id === id);
    if (index >= 0) this.rules.splice(index, 1);
    return index >= 0;
  }

  returned(): ReturnedPodRecord[] {
    return [...this.log];
  }

  private matching(pod: KubeObject): InstalledRule | undefined {
    const labels = pod.metadata.labels ?? {};
    return this.rules.find(
      ({ rule, returns }) =>
        (rule.namespace ?? "default") === pod.metadata.namespace &&
        Object.entries(rule.matchLabels).every(([k, v]) => labels[k] === v) &&
        (rule.maxReturns === undefined || returns < rule.maxReturns),
    );
  }

  private onChange(change: StoreChange): void {
    if (!isDeparture(change)) return;
    const installed = this.matching(change.object);
    const nodeName = (change.object.spec as { nodeName?: string } | undefined)?.nodeName;
    if (!installed || !nodeName) return;
    installed.returns++;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      this.bringBack(installed.id, installed.rule, change.object, nodeName);
    }, installed.rule.delayMs ?? 1000);
    timer.unref();
    this.timers.add(timer);
  }

  private bringBack(id: string, rule: ReturningPodsRule, gone: KubeObject, nodeName: string): void {
    if (!this.store.get("nodes", undefined, nodeName)) return;
    const seed = replacementSeed(rule, gone);
    this.addPod(seed);
    this.log.push({
      ...this.now(),
      rule: id,
      replaced: `${gone.metadata.namespace}/${gone.metadata.name}`,
      pod: `${seed.namespace}/${seed.name}`,
      nodeName,
    });
  }

  close(): void {
    this.unsubscribe();
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }
}
