// One drain of the node (I/O through an injected KubeApi and Clock): evicts the pods selectEvictions picks through the
// Eviction API, retries PodDisruptionBudget refusals with backoff, and waits for the pods to go, until the deadline.
import type { Logger } from "pino";
import type { Clock } from "../../util/clock.js";
import type { KubeApi } from "./client.js";
import { gracePeriodSeconds, pdbRetryDelayMs, podRef, selectEvictions, type PodView } from "./plan.js";
import type { EvictionMetricOutcome } from "./metrics.js";

/** Evictions sent at once (a node of 100 pods is asked in 13 rounds of requests, not 100 in a row). */
const evictionConcurrency = 8;

export interface DrainProgress {
  /** Pods whose eviction was accepted, as namespace/name (kept across a restart). */
  evicted: string[];
  /** Pods a PodDisruptionBudget refused at least once. */
  pdbBlocked: string[];
  /** Longest hold by a PodDisruptionBudget so far, in ms (first refusal to accepted eviction, or to now). */
  pdbHeldMs: number;
}

export type DrainResult = ({ outcome: "drained" } | { outcome: "incomplete"; podsLeft: string[] } | { outcome: "interrupted" }) & DrainProgress;

export interface DrainOptions {
  api: KubeApi;
  nodeName: string;
  self: { namespace: string; name: string } | undefined;
  evictEmptyDir: boolean;
  /** Wall-clock deadline (NotBefore minus the reserve). */
  deadlineMs: number;
  pdbRetryInitialMs: number;
  pdbRetryMaxMs: number;
  podPollMs: number;
  clock: Clock;
  logger: Logger;
  /** Progress of an earlier run of this drain (after a restart). */
  resumeFrom?: DrainProgress;
  /** False once the drain should stop (the event is no longer Scheduled). */
  stillWanted: () => boolean;
  /** Called after each round that changed the progress (to persist it). */
  onProgress: (progress: DrainProgress) => void;
  onEviction: (outcome: EvictionMetricOutcome) => void;
  signal: AbortSignal;
}

interface PodRetry {
  retries: number;
  nextAtMs: number;
  firstRefusedAtMs: number;
}

/** Drains until every evictable pod is gone (drained), the deadline passes (incomplete), or it is no longer wanted. */
export async function drainNode(options: DrainOptions): Promise<DrainResult> {
  const { api, clock } = options;
  const evicted = new Set(options.resumeFrom?.evicted ?? []);
  const pdbBlocked = new Set(options.resumeFrom?.pdbBlocked ?? []);
  let pdbHeldMs = options.resumeFrom?.pdbHeldMs ?? 0;
  const retries = new Map<string, PodRetry>();
  const progress = (): DrainProgress => ({ evicted: [...evicted], pdbBlocked: [...pdbBlocked], pdbHeldMs });
  for (;;) {
    if (options.signal.aborted || !options.stillWanted()) return { outcome: "interrupted", ...progress() };
    const pods = await api.listPods(options.nodeName);
    const selection = selectEvictions(pods, options.self, options.evictEmptyDir);
    const nowMs = clock.now();
    for (const [ref, retry] of retries) if (pdbBlocked.has(ref)) pdbHeldMs = Math.max(pdbHeldMs, nowMs - retry.firstRefusedAtMs);
    if (selection.evict.length === 0 && selection.terminating.length === 0) return { outcome: "drained", ...progress() };
    if (nowMs >= options.deadlineMs) {
      return { outcome: "incomplete", podsLeft: [...selection.evict, ...selection.terminating].map(podRef).sort(), ...progress() };
    }
    const due = selection.evict.filter((pod) => (retries.get(podRef(pod))?.nextAtMs ?? 0) <= clock.monotonicMs());
    for (let i = 0; i < due.length; i += evictionConcurrency) {
      const before = evicted.size + pdbBlocked.size;
      await Promise.all(due.slice(i, i + evictionConcurrency).map((pod) => evictOne(pod, options, retries, evicted, pdbBlocked, (held) => (pdbHeldMs = Math.max(pdbHeldMs, held)))));
      if (evicted.size + pdbBlocked.size !== before) options.onProgress(progress()); // after each group: a restart counts them
    }
    const nextRetryMs = Math.min(...[...retries.values()].map((r) => r.nextAtMs - clock.monotonicMs()), options.podPollMs);
    const waitMs = Math.max(50, Math.min(nextRetryMs, options.podPollMs, options.deadlineMs - clock.now()));
    await clock.sleep(waitMs, options.signal).catch(() => undefined);
  }
}

async function evictOne(
  pod: PodView,
  options: DrainOptions,
  retries: Map<string, PodRetry>,
  evicted: Set<string>,
  pdbBlocked: Set<string>,
  held: (ms: number) => void,
): Promise<void> {
  const { clock } = options;
  const ref = podRef(pod);
  const grace = gracePeriodSeconds(pod.terminationGracePeriodSeconds, options.deadlineMs - clock.now());
  const result = await options.api.evict(pod, grace);
  const retry = retries.get(ref);
  switch (result.kind) {
    case "evicted":
      evicted.add(ref);
      if (retry && pdbBlocked.has(ref)) held(clock.now() - retry.firstRefusedAtMs);
      retries.delete(ref);
      options.onEviction("evicted");
      return;
    case "gone":
      retries.delete(ref);
      options.onEviction("gone");
      return;
    case "throttled": // API Priority and Fairness: waited out, not a PodDisruptionBudget refusal
      retries.set(ref, { retries: retry?.retries ?? 0, nextAtMs: clock.monotonicMs() + result.retryAfterMs, firstRefusedAtMs: retry?.firstRefusedAtMs ?? clock.now() });
      options.onEviction("throttled");
      return;
    case "pdb":
    case "error": {
      const count = (retry?.retries ?? 0) + 1;
      if (result.kind === "pdb") pdbBlocked.add(ref);
      else options.logger.warn({ pod: ref, status: result.status, err: result.message }, "eviction failed; retrying");
      retries.set(ref, {
        retries: count,
        nextAtMs: clock.monotonicMs() + pdbRetryDelayMs(count, options.pdbRetryInitialMs, options.pdbRetryMaxMs),
        firstRefusedAtMs: retry?.firstRefusedAtMs ?? clock.now(),
      });
      options.onEviction(result.kind === "pdb" ? "pdb_refused" : "error");
      if (count === 1 && result.kind === "pdb") options.logger.info({ pod: ref, detail: result.message }, "a PodDisruptionBudget holds the pod; retrying until the deadline");
    }
  }
}
