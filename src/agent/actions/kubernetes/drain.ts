// One drain of the node (I/O through an injected KubeApi and Clock): evicts the pods selectEvictions picks through the
// Eviction API, each pod once (its uid as precondition), with the grace of the soonest deadline acting on the node;
// retries PodDisruptionBudget refusals and failed evictions with backoff, waits out throttling (429 with Retry-After),
// and waits for the pods to go, until the deadline, where it deletes or leaves the pods still there (per event type).
// Its progress survives a restart.
import type { Logger } from "pino";
import type { Clock } from "@sef/runtime/clock.js";
import type { EvictionOutcome, KubeApi } from "./client.js";
import { deadlineDeleteGraceSeconds, gracePeriodSeconds, pdbRetryDelayMs, throttleWaitMs, type Taint } from "./plan.js";
import type { DeadlineAction } from "./settings.js";
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

/** The verdict's reason when the deadline ended the drain (pods.ts). */
const deadlineReason = "at its deadline";
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
  /** Terminating pods asked again with a shorter grace (a sooner event's deadline), as namespace/name. */
  graceShortened?: string[];
}

/** Pods deleted at the deadline, with the grace they were given (the time left before NotBefore). */
export interface DeadlineDeletion {
  podsDeleted: string[];
  graceSeconds: number;
}

/** What the drain's last look at the node left there on purpose (named in the record). */
export interface DrainLeft {
  podsOptedOut: string[];
  podsArrivedTolerating: string[];
  podsStuckTerminating: string[];
  podsWithoutController: string[];
  podsWithEmptyDir: string[];
}

export type DrainResult =
  | ({ outcome: "drained" } & DrainProgress & DrainLeft)
  | ({ outcome: "incomplete"; podsLeft: string[]; reason: string; deleted?: DeadlineDeletion } & DrainProgress &
      DrainLeft)
  | ({ outcome: "interrupted" } & DrainProgress);

export interface DrainOptions {
  /** The calls a drain makes. */
  api: Pick<KubeApi, "listPods" | "evict" | "deletePod">;
  nodeName: string;
  self: { namespace: string; name: string } | undefined;
  evictEmptyDir: boolean;
  /** Evict pods without a controller too (`kubectl drain --force`). */
  force: boolean;
  /** sef's NoSchedule taint of this event: pods that arrive after the start and tolerate it are left. */
  taint: Pick<Taint, "key" | "value" | "effect">;
  /** Wall-clock deadline (NotBefore minus the reserve). */
  deadlineMs: number;
  /** NotBefore (wall ms): the time left before it is the grace of the pods deleted at the deadline. */
  endMs: number;
  /** What is done at the deadline with pods still refused or terminating (default leave). */
  atDeadline?: DeadlineAction;
  /** The soonest deadline of the events acting on the node (wall ms; default: this drain's): caps every grace. */
  graceDeadlineMs?: () => number;
  /** Label selector of the pods to drain ("" or absent: all). */
  podSelector?: string;
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
    const pods = await options.api.listPods(options.nodeName, options.podSelector ?? "");
    run.takeRosterOnce(pods);
    const nowMs = options.clock.now();
    const selection = selectEvictions(pods, run.rules(nowMs));
    run.notePdbHolds(nowMs);
    const verdict = drainVerdict(selection, nowMs, options.deadlineMs);
    if (verdict.kind !== "continue")
      return run.result(verdict, selection, await run.deleteAtDeadline(verdict, selection));
    await run.shortenGrace(selection.shorterGrace);
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
  private readonly graceShortened: Set<string>;
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
    this.graceShortened = new Set(from?.graceShortened ?? []);
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
      graceShortened: [...this.graceShortened],
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
    const graceDeadlineMs = this.graceDeadlineMs();
    return { self, evictEmptyDir, force, taint, roster: this.roster, evicted: this.evictedIds, nowMs, graceDeadlineMs };
  }

  /** The deadline every grace is capped by: the soonest of this drain's and the other events' acting on the node. */
  private graceDeadlineMs(): number {
    return Math.min(this.options.deadlineMs, this.options.graceDeadlineMs?.() ?? Number.POSITIVE_INFINITY);
  }

  notePdbHolds(nowMs: number): void {
    for (const retry of this.retries.values())
      if (this.pdbBlocked.has(retry.ref)) this.pdbHeldMs = Math.max(this.pdbHeldMs, nowMs - retry.firstRefusedAtMs);
  }

  result(
    verdict: Exclude<DrainVerdict, { kind: "continue" }>,
    selection: EvictionSelection,
    deleted: DeadlineDeletion | undefined,
  ): DrainResult {
    const left: DrainLeft = {
      podsOptedOut: skippedFor(selection, "opted-out"),
      podsArrivedTolerating: skippedFor(selection, "tolerating-arrival"),
      podsStuckTerminating: selection.stuck.map(podRef).sort(),
      podsWithoutController: skippedFor(selection, "no-controller"),
      podsWithEmptyDir: skippedFor(selection, "emptydir"),
    };
    if (verdict.kind === "drained") return { outcome: "drained", ...this.progress(), ...left };
    const { podsLeft, reason } = verdict;
    return { outcome: "incomplete", podsLeft, reason, ...(deleted ? { deleted } : {}), ...this.progress(), ...left };
  }

  /**
   * At the deadline, under `atDeadline: delete`: the pods still refused (or not yet asked) and those still terminating
   * are deleted with the time left before NotBefore as their grace (their uid as precondition).
   */
  async deleteAtDeadline(
    verdict: Exclude<DrainVerdict, { kind: "continue" }>,
    selection: EvictionSelection,
  ): Promise<DeadlineDeletion | undefined> {
    const { api, clock, logger, atDeadline, endMs } = this.options;
    if (verdict.kind !== "incomplete" || verdict.reason !== deadlineReason || atDeadline !== "delete") return undefined;
    const pods = [...selection.evict, ...selection.deferred, ...selection.terminating];
    const graceSeconds = deadlineDeleteGraceSeconds(endMs, clock.now());
    const podsDeleted: string[] = [];
    // A deletion refused (403 without the RBAC rule, 500, no answer) leaves the pod: logged, named as left.
    const failed = (pod: PodView) => (err: unknown) => {
      logger.warn({ err, pod: podRef(pod) }, "could not delete a pod at the drain's deadline; it is left");
      return false;
    };
    for (const group of inGroupsOf(pods, evictionConcurrency)) {
      const done = await Promise.all(group.map((pod) => api.deletePod(pod, graceSeconds).catch(failed(pod))));
      group.forEach((pod, j) => done[j] && podsDeleted.push(podRef(pod)));
    }
    podsDeleted.sort();
    if (podsDeleted.length > 0)
      logger.warn({ podsDeleted, graceSeconds }, "the drain's deadline: pods still there deleted with the time left");
    return { podsDeleted, graceSeconds };
  }

  /** Terminating pods whose grace outlasts the soonest deadline: evicted again with the shorter grace. */
  async shortenGrace(pods: readonly PodView[]): Promise<void> {
    for (const group of inGroupsOf(pods, evictionConcurrency)) {
      await Promise.all(
        group.map(async (pod) => {
          const grace = gracePeriodSeconds(
            pod.terminationGracePeriodSeconds,
            this.graceDeadlineMs() - this.options.clock.now(),
          );
          const result = await this.options.api.evict(pod, grace);
          if (result.kind === "evicted") this.graceShortened.add(podRef(pod));
        }),
      );
    }
  }

  /** Evicts the pods whose retry is due, in groups; persists the progress after each group that changed it. */
  async evictDue(pods: readonly PodView[]): Promise<void> {
    const { clock } = this.options;
    const toEvict = new Set(pods.map(podIdentity));
    for (const id of this.retries.keys()) if (!toEvict.has(id)) this.retries.delete(id); // gone, or no longer to evict
    const due = pods.filter(
      (pod) => (this.retries.get(podIdentity(pod))?.nextAtMs ?? Number.NEGATIVE_INFINITY) <= clock.monotonicMs(),
    );
    for (const group of inGroupsOf(due, evictionConcurrency)) {
      if (this.pausedUntilMs > clock.monotonicMs()) return; // throttled: the rest waits for the pause to end
      await Promise.all(group.map((pod) => this.evictOne(pod)));
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
    const grace = gracePeriodSeconds(pod.terminationGracePeriodSeconds, this.graceDeadlineMs() - clock.now());
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

/** The items in order, in groups of `size` (the last one shorter): the rounds of requests sent at once. */
export function inGroupsOf<T>(items: readonly T[], size: number): T[][] {
  return Array.from({ length: Math.ceil(items.length / size) }, (_, k) => items.slice(k * size, (k + 1) * size));
}

function metricOutcome(result: EvictionOutcome): EvictionMetricOutcome {
  if (result.kind === "pdb") return "pdb_refused";
  return result.kind;
}
