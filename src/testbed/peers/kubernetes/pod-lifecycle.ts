// Graceful pod deletion as the API server and kubelet carry it out: deletionTimestamp = now + grace period, then the
// pod object disappears once its containers have stopped (its own stop time, at most the grace period); grace 0
// removes it at once; a later deletion with a shorter grace period shortens the wait.
import { kubeTime, type KubeObject } from "./objects.js";
import type { ClusterStore } from "./store.js";
import { objectKey } from "./store.js";

export class PodTerminator {
  private readonly timers = new Map<string, { timer: NodeJS.Timeout; dueMonotonicMs: number }>();
  /** Seeded stop times (seconds after deletion begins), by namespace/name. */
  private readonly stopsAfterSeconds = new Map<string, number>();

  constructor(private readonly store: ClusterStore) {}

  setStopsAfterSeconds(namespace: string, name: string, seconds: number | undefined): void {
    if (seconds === undefined) this.stopsAfterSeconds.delete(objectKey(namespace, name));
    else this.stopsAfterSeconds.set(objectKey(namespace, name), seconds);
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
    if (effectiveGrace === 0) {
      this.removeNow(key, namespace, pod.metadata.name, pod.metadata.uid);
      return undefined;
    }
    const nowMonotonicMs = this.store.clock.monotonicNowMs();
    const stopAfterMs = Math.min(effectiveGrace, this.stopsAfterSeconds.get(key) ?? effectiveGrace) * 1000;
    const existing = this.timers.get(key);
    if (existing && existing.dueMonotonicMs <= nowMonotonicMs + stopAfterMs) return pod;
    if (existing) clearTimeout(existing.timer);
    const current = pod.metadata.deletionGracePeriodSeconds;
    if (current === undefined || effectiveGrace < current) {
      pod.metadata.deletionTimestamp = kubeTime(this.store.clock.wallNowMs() + effectiveGrace * 1000);
      pod.metadata.deletionGracePeriodSeconds = effectiveGrace;
      pod = this.store.replace("pods", pod);
    }
    const timer = setTimeout(() => this.removeNow(key, namespace, pod.metadata.name, pod.metadata.uid), stopAfterMs);
    timer.unref();
    this.timers.set(key, { timer, dueMonotonicMs: nowMonotonicMs + stopAfterMs });
    return pod;
  }

  private removeNow(key: string, namespace: string, name: string, uid: string): void {
    const timer = this.timers.get(key);
    if (timer) clearTimeout(timer.timer);
    this.timers.delete(key);
    if (this.store.get("pods", namespace, name)?.metadata.uid === uid) this.store.remove("pods", namespace, name);
    this.stopsAfterSeconds.delete(key);
  }

  /** Pods still terminating (for close and tests). */
  pendingCount(): number {
    return this.timers.size;
  }

  close(): void {
    for (const { timer } of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
  }
}
