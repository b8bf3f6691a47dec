// One drain of the node (I/O through an injected KubeApi and Clock): evicts the pods selectEvictions picks through the
// Eviction API, each pod once; retries PodDisruptionBudget refusals and failed evictions with backoff, waits out
// throttling (429 with Retry-After), and waits for the pods to go, until the deadline. Its progress survives a restart.
import type { Logger } from "pino";
import type { Clock } from "../../util/clock.js";
import type { EvictionOutcome, KubeApi } from "./client.js";
import { gracePeriodSeconds, pdbRetryDelayMs, throttleWaitMs, type Taint } from "./plan.js";
import {
  drainVerdict,
  podIdentity,
  podRef,
  selectEvictions,
  skippedFor,
  type DrainRules,
  type DrainVerdict,
  type EvictionSelection,
  type PodView,
} from "./pods.js";
import type { EvictionMetricOutcome } from "./metrics.js";

/** Evictions sent at once (a node of 100 pods is asked in 13 rounds of requests, not 100 in a row). */
const evictionConcurrency = 8;
/** The message of a failed eviction kept in the progress and the record (the API's Status message). */
const errorMessageChars = 200;

/** An eviction that failed with another status (403, 500, ...): the last failure of the pod. */
export interface EvictionError {
  pod: string;
  status: number;
  message: string;
}

export interface DrainProgress {
  /** Pods whose eviction was accepted, as namespace/name, one entry per pod (a pod that came back is a second one). */
  evicted: string[];
  /** Pods a PodDisruptionBudget refused at least once. */
  pdbBlocked: string[];
  /** Longest hold by a PodDisruptionBudget so far, in ms (first refusal to accepted eviction, or to now). */
  pdbHeldMs: number;
  /** Identities (uid) of the evicted pods: never evicted again. Absent in the progress of an older agent. */
  evictedIds?: string[];
  /** Identities of the pods on the node when the drain started (arrivals are told from them). */
  roster?: string[];
  /** Throttled eviction requests (429 without a disruption budget), waited out. */
  throttled?: number;
  /** Pods whose eviction failed with another status at least once, with the last failure. */
  evictionErrors?: EvictionError[];
}

/** What the drain's last look at the node left there on purpose (named in the record). */
export interface DrainLeft {
  podsOptedOut: string[];
  podsArrivedTolerating: string[];
  podsStuckTerminating: string[];
  podsWithoutController: string[];
}

export type DrainResult =
  | ({ outcome: "drained" } & DrainProgress & DrainLeft)
  | ({ outcome: "incomplete"; podsLeft: string[]; reason: string } & DrainProgress & DrainLeft)
  | ({ outcome: "interrupted" } & DrainProgress);

export interface DrainOptions {
  /** The two calls a drain makes. */
  api: Pick<KubeApi, "listPods" | "evict">;
  nodeName: string;
  self: { namespace: string; name: string } | undefined;
  evictEmptyDir: boolean;
  /** Evict pods without a controller too (`kubectl drain --force`). */
  force: boolean;
  /** sef's NoSchedule taint of this event: pods that arrive after the start and tolerate it are left. */
  taint: Pick<Taint, "key" | "value" | "effect">;
  /** Wall-clock deadline (NotBefore minus the reserve). */
  deadlineMs: number;
  pdbRetryInitialMs: number;
  /** Longest wait between retries of a refused eviction, and the longest wait a throttling hint gets. */
  pdbRetryMaxMs: number;
  /** The jitter of the retry waits, in [0, 1) (default Math.random; tests pass a fixed one). */
  random?: () => number;
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

/** A pod whose eviction was refused or failed, by identity (a pod that comes back under its name starts afresh). */
interface PodRetry {
  ref: string;
  retries: number;
  nextAtMs: number;
  firstRefusedAtMs: number;
}

/** Drains until every evictable pod is gone (drained), the deadline passes or only pods it may not evict are left (incomplete), or it is no longer wanted. */
export async function drainNode(options: DrainOptions): Promise<DrainResult> {
  const run = new DrainRun(options);
  for (;;) {
    if (options.signal.aborted || !options.stillWanted()) return { outcome: "interrupted", ...run.progress() };
    const pods = await options.api.listPods(options.nodeName);
    run.takeRosterOnce(pods);
    const nowMs = options.clock.now();
    const selection = selectEvictions(pods, run.rules(nowMs));
    run.notePdbHolds(nowMs);
    const verdict = drainVerdict(selection, nowMs, options.deadlineMs);
    if (verdict.kind !== "continue") return run.result(verdict, selection);
    await run.evictDue(selection.evict);
    await options.clock.sleep(run.waitMs(), options.signal).catch(() => undefined);
  }
}

/** The state of one drain between looks at the node. */
class DrainRun {
  private readonly evicted: string[];
  private readonly evictedIds: Set<string>;
  private roster: Set<string> | undefined;
  private readonly pdbBlocked: Set<string>;
  private pdbHeldMs: number;
  private throttled: number;
  private readonly errors: Map<string, EvictionError>;
  private readonly retries = new Map<string, PodRetry>();
  /** Monotonic time before which no eviction is sent (a throttled answer pauses them all). */
  private pausedUntilMs = Number.NEGATIVE_INFINITY;
  /** Changes to the progress since it was last handed to onProgress. */
  private unsaved = 0;

  constructor(private readonly options: DrainOptions) {
    const from = options.resumeFrom;
    this.evicted = [...(from?.evicted ?? [])];
    this.evictedIds = new Set(from?.evictedIds ?? []);
    this.roster = from?.roster ? new Set(from.roster) : undefined;
    this.pdbBlocked = new Set(from?.pdbBlocked ?? []);
    this.pdbHeldMs = from?.pdbHeldMs ?? 0;
    this.throttled = from?.throttled ?? 0;
    this.errors = new Map((from?.evictionErrors ?? []).map((e) => [e.pod, e]));
  }

  progress(): DrainProgress {
    return {
      evicted: [...this.evicted],
      pdbBlocked: [...this.pdbBlocked],
      pdbHeldMs: this.pdbHeldMs,
      evictedIds: [...this.evictedIds],
      ...(this.roster ? { roster: [...this.roster] } : {}),
      throttled: this.throttled,
      evictionErrors: [...this.errors.values()],
    };
  }

  /** The pods on the node at the drain's first look (persisted at once, so a restart tells arrivals the same way). */
  takeRosterOnce(pods: readonly PodView[]): void {
    if (this.roster !== undefined) return;
    this.roster = new Set(pods.map(podIdentity));
    this.options.onProgress(this.progress());
  }

  rules(nowMs: number): DrainRules {
    const { self, evictEmptyDir, force, taint } = this.options;
    return { self, evictEmptyDir, force, taint, roster: this.roster, evicted: this.evictedIds, nowMs };
  }

  notePdbHolds(nowMs: number): void {
    for (const retry of this.retries.values())
      if (this.pdbBlocked.has(retry.ref)) this.pdbHeldMs = Math.max(this.pdbHeldMs, nowMs - retry.firstRefusedAtMs);
  }

  result(verdict: Exclude<DrainVerdict, { kind: "continue" }>, selection: EvictionSelection): DrainResult {
    const left: DrainLeft = {
      podsOptedOut: skippedFor(selection, "opted-out"),
      podsArrivedTolerating: skippedFor(selection, "tolerating-arrival"),
      podsStuckTerminating: selection.stuck.map(podRef).sort(),
      podsWithoutController: skippedFor(selection, "no-controller"),
    };
    if (verdict.kind === "drained") return { outcome: "drained", ...this.progress(), ...left };
    return { outcome: "incomplete", podsLeft: verdict.podsLeft, reason: verdict.reason, ...this.progress(), ...left };
  }

  /** Evicts the pods whose retry is due, in groups; persists the progress after each group that changed it. */
  async evictDue(pods: readonly PodView[]): Promise<void> {
    const { clock } = this.options;
    const toEvict = new Set(pods.map(podIdentity));
    for (const id of this.retries.keys()) if (!toEvict.has(id)) this.retries.delete(id); // gone, or no longer to evict
    const due = pods.filter(
      (pod) => (this.retries.get(podIdentity(pod))?.nextAtMs ?? Number.NEGATIVE_INFINITY) <= clock.monotonicMs(),
    );
    for (let i = 0; i < due.length; i += evictionConcurrency) {
      if (this.pausedUntilMs > clock.monotonicMs()) return; // throttled: the rest waits for the pause to end
      await Promise.all(due.slice(i, i + evictionConcurrency).map((pod) => this.evictOne(pod)));
      if (this.unsaved > 0) {
        this.unsaved = 0;
        this.options.onProgress(this.progress()); // after each group: a restart counts them
      }
    }
  }

  /** Until the next look: the poll interval, or sooner when a retry or the end of a pause is due (at least 50 ms). */
  waitMs(): number {
    const { clock, podPollMs, deadlineMs } = this.options;
    const nowMs = clock.monotonicMs();
    const paused = this.pausedUntilMs > nowMs;
    const dues = paused ? [this.pausedUntilMs - nowMs] : [...this.retries.values()].map((r) => r.nextAtMs - nowMs);
    return Math.max(50, Math.min(podPollMs, deadlineMs - clock.now(), ...dues));
  }

  private async evictOne(pod: PodView): Promise<void> {
    const options = this.options;
    const clock = options.clock;
    const grace = gracePeriodSeconds(pod.terminationGracePeriodSeconds, options.deadlineMs - clock.now());
    const result = await options.api.evict(pod, grace);
    const ref = podRef(pod);
    const id = podIdentity(pod);
    const retry = this.retries.get(id);
    if (result.kind === "evicted") {
      this.evicted.push(ref);
      this.evictedIds.add(id);
      if (retry && this.pdbBlocked.has(ref))
        this.pdbHeldMs = Math.max(this.pdbHeldMs, clock.now() - retry.firstRefusedAtMs);
      this.retries.delete(id);
    } else if (result.kind === "gone") this.retries.delete(id);
    else if (result.kind === "throttled") this.pauseFor(ref, result);
    else this.retryLater(id, ref, result, retry);
    if (result.kind !== "gone") this.unsaved++;
    options.onEviction(metricOutcome(result));
  }

  /** A throttled eviction pauses every eviction for the bounded Retry-After; it is not a refusal of the pod. */
  private pauseFor(ref: string, result: Extract<EvictionOutcome, { kind: "throttled" }>): void {
    const waitMs = throttleWaitMs(
      result.retryAfterMs,
      this.options.pdbRetryMaxMs,
      this.options.random?.() ?? Math.random(),
    );
    this.pausedUntilMs = Math.max(this.pausedUntilMs, this.options.clock.monotonicMs() + waitMs);
    this.throttled++;
    const log =
      this.throttled === 1
        ? this.options.logger.info.bind(this.options.logger)
        : this.options.logger.debug.bind(this.options.logger);
    log(
      { pod: ref, retryAfterMs: result.retryAfterMs, waitMs, detail: result.message },
      "the API server throttled an eviction (429, no disruption budget); evictions wait",
    );
  }

  /** A PodDisruptionBudget refusal or a failed eviction: retried with backoff until the deadline. */
  private retryLater(
    id: string,
    ref: string,
    result: Extract<EvictionOutcome, { kind: "pdb" | "error" }>,
    retry: PodRetry | undefined,
  ): void {
    const { clock, logger, pdbRetryInitialMs, pdbRetryMaxMs } = this.options;
    const count = (retry?.retries ?? 0) + 1;
    const nextAtMs =
      clock.monotonicMs() +
      pdbRetryDelayMs(count, pdbRetryInitialMs, pdbRetryMaxMs, this.options.random?.() ?? Math.random());
    this.retries.set(id, { ref, retries: count, nextAtMs, firstRefusedAtMs: retry?.firstRefusedAtMs ?? clock.now() });
    if (result.kind === "pdb") {
      this.pdbBlocked.add(ref);
      if (count === 1)
        logger.info(
          { pod: ref, detail: result.message },
          "a PodDisruptionBudget holds the pod; retrying until the deadline",
        );
      return;
    }
    const previous = this.errors.get(ref);
    this.errors.set(ref, { pod: ref, status: result.status, message: result.message.slice(0, errorMessageChars) });
    const log = previous?.status === result.status ? logger.debug.bind(logger) : logger.warn.bind(logger);
    log({ pod: ref, status: result.status, err: result.message }, "eviction failed; retrying until the deadline");
  }
}

function metricOutcome(result: EvictionOutcome): EvictionMetricOutcome {
  if (result.kind === "pdb") return "pdb_refused";
  return result.kind;
}
