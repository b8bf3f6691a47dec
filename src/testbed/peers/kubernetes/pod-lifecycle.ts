// Graceful pod deletion as the API server and kubelet carry it out: deletionTimestamp = start + grace period, then
// the kubelet's final delete once the containers have stopped (their own stop time, at most the grace period)
// removes the pod object, or, while finalizers remain, leaves it terminating (grace 0, terminal phase) until they
// are removed. Grace 0 is the final delete at once; a later deletion may shorten the wait, never lengthen it. A pod
// whose kubelet never confirms (stopsAfterSeconds "never") stays terminating until a delete with grace 0.
import { kubeTime, type KubeObject } from "./objects.js";
import type { ClusterStore } from "./store.js";
import { objectKey } from "./store.js";

/** When a pod's containers stop once deletion begins: seconds, or never (its kubelet is gone). */
export type StopsAfter = number | "never";

export class PodTerminator {
  private readonly timers = new Map<string, { timer: NodeJS.Timeout; dueMonotonicMs: number }>();
  /** Seeded stop times (seconds after deletion begins, or never), by namespace/name. */
  private readonly stopsAfter = new Map<string, StopsAfter>();

  constructor(private readonly store: ClusterStore) {}

  setStopsAfterSeconds(namespace: string, name: string, stopsAfter: StopsAfter | undefined): void {
    const key = objectKey(namespace, name);
    if (stopsAfter === undefined) this.stopsAfter.delete(key);
    else
      this.stopsAfter.set(
        key,
        stopsAfter === "never" || stopsAfter === Number.POSITIVE_INFINITY ? "never" : stopsAfter,
      );
  }

  /** Grace period of a deletion: the request's, else the pod's own, else 30 s. */
  static gracePeriodOf(pod: KubeObject, requestedSeconds: number | undefined): number {
    if (requestedSeconds !== undefined) return Math.max(0, requestedSeconds);
    const own = (pod.spec as { terminationGracePeriodSeconds?: number } | undefined)?.terminationGracePeriodSeconds;
    return own ?? 30;
  }

  /** Begins deleting `pod` (a current copy); returns the pod as stored afterwards, or undefined once removed. */
  beginDeletion(pod: KubeObject, graceSeconds: number): KubeObject | undefined {
    const namespace = pod.metadata.namespace ?? "default";
    const key = objectKey(namespace, pod.metadata.name);
    const terminal = ["Succeeded", "Failed"].includes((pod.status as { phase?: string } | undefined)?.phase ?? "");
    const effectiveGrace = terminal || !(pod.spec as { nodeName?: string } | undefined)?.nodeName ? 0 : graceSeconds;
    const current = pod.metadata.deletionGracePeriodSeconds;
    // Already terminating with grace 0 (the final delete happened; finalizers hold it): nothing changes.
    if (current === 0) return pod;
    if (effectiveGrace === 0) return this.finalDelete(key, pod);
    const stopsAfter = this.stopsAfter.get(key) ?? effectiveGrace;
    if (current !== undefined && effectiveGrace >= current) return pod;
    const startedMs =
      current !== undefined
        ? Date.parse(pod.metadata.deletionTimestamp ?? "") - current * 1000
        : this.store.clock.wallNowMs();
    pod.metadata.deletionTimestamp = kubeTime(startedMs + effectiveGrace * 1000);
    pod.metadata.deletionGracePeriodSeconds = effectiveGrace;
    const stored = this.store.replace("pods", pod);
    if (stopsAfter !== "never") this.scheduleStop(key, stored, Math.min(effectiveGrace, stopsAfter) * 1000);
    return stored;
  }

  private scheduleStop(key: string, pod: KubeObject, stopAfterMs: number): void {
    const dueMonotonicMs = this.store.clock.monotonicNowMs() + stopAfterMs;
    const existing = this.timers.get(key);
    if (existing && existing.dueMonotonicMs <= dueMonotonicMs) return;
    if (existing) clearTimeout(existing.timer);
    const timer = setTimeout(() => {
      const now = this.store.get("pods", pod.metadata.namespace, pod.metadata.name);
      if (now?.metadata.uid === pod.metadata.uid) this.finalDelete(key, now);
    }, stopAfterMs);
    timer.unref();
    this.timers.set(key, { timer, dueMonotonicMs });
  }

  /**
   * The kubelet's (or a force) delete with grace 0: the pod object goes, unless finalizers remain; then it stays,
   * terminal, with deletionGracePeriodSeconds 0 until they are removed. Returns the pod if it stays.
   */
  private finalDelete(key: string, pod: KubeObject): KubeObject | undefined {
    const timer = this.timers.get(key);
    if (timer) clearTimeout(timer.timer);
    this.timers.delete(key);
    const { namespace, name } = pod.metadata;
    if ((pod.metadata.finalizers ?? []).length === 0) {
      this.store.remove("pods", namespace, name);
      this.stopsAfter.delete(key);
      return undefined;
    }
    const startedMs = pod.metadata.deletionTimestamp
      ? Date.parse(pod.metadata.deletionTimestamp) - (pod.metadata.deletionGracePeriodSeconds ?? 0) * 1000
      : this.store.clock.wallNowMs();
    pod.metadata.deletionTimestamp = kubeTime(startedMs);
    pod.metadata.deletionGracePeriodSeconds = 0;
    pod.status = stoppedStatus(pod.status, this.store.nowIso());
    return this.store.replace("pods", pod);
  }

  /** Pods waiting for their containers to stop (for close and tests). */
  pendingCount(): number {
    return this.timers.size;
  }

  close(): void {
    for (const { timer } of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
  }
}

/** The status the kubelet reports once it has stopped a deleted pod's containers: Succeeded, nothing ready. */
export function stoppedStatus(status: unknown, nowIso: string): Record<string, unknown> {
  const current = (status ?? {}) as {
    conditions?: { type: string; status: string }[];
    containerStatuses?: { name: string; state?: { running?: { startedAt?: string } } }[];
  };
  const notReady = new Set(["Ready", "ContainersReady"]);
  return {
    ...current,
    phase: "Succeeded",
    conditions: (current.conditions ?? []).map((c) =>
      notReady.has(c.type) ? { ...c, status: "False", reason: "PodCompleted", lastTransitionTime: nowIso } : c,
    ),
    containerStatuses: (current.containerStatuses ?? []).map((c) => ({
      ...c,
      ready: false,
      started: false,
      state: {
        terminated: {
          exitCode: 0,
          reason: "Completed",
          startedAt: c.state?.running?.startedAt ?? nowIso,
          finishedAt: nowIso,
        },
      },
    })),
  };
}
