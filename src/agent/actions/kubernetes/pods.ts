// Pure rules of which pods a drain evicts, as `kubectl drain` treats them: DaemonSet, mirror and sef's own pods stay,
// pods without a controller only with `force`, an opt-out label, stuck terminating pods not waited for, arrivals that
// tolerate sef's taint left, each pod (by uid) evicted once, lowest priority first and system-critical pods last;
// terminating pods whose grace outlasts a sooner deadline; and when a drain is over. Plain values in and out.
import type { Taint } from "./plan.js";

/** A pod's toleration (core/v1 Toleration; tolerationSeconds does not matter for a NoSchedule taint). */
export interface Toleration {
  key?: string;
  operator?: string;
  value?: string;
  effect?: string;
}

/** The Pod fields a drain reads. */
export interface PodView {
  namespace: string;
  name: string;
  /** metadata.uid: tells a pod from another one that came back under the same name. */
  uid: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  /** Kinds of the owner references marked as controller (e.g. ["ReplicaSet"]); empty: no controller. */
  controllerKinds: string[];
  phase: string;
  /** The pod's own terminationGracePeriodSeconds (Kubernetes defaults it to 30). */
  terminationGracePeriodSeconds: number | undefined;
  hasEmptyDir: boolean;
  /**
   * metadata.deletionTimestamp in epoch ms: set when its deletion began, to that moment plus the grace period (the
   * API server's "gone by" time). Undefined: not being deleted.
   */
  deletionTimestampMs: number | undefined;
  tolerations: Toleration[];
  /** spec.priority (0 when unset). */
  priority: number;
  /** spec.priorityClassName ("" when unset). */
  priorityClassName: string;
}

/** A pod as the API serves it (JSON, or the official client's model): only the fields `podViewOf` reads. */
export interface PodObject {
  metadata?: {
    namespace?: string;
    name?: string;
    uid?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: Array<{ kind: string; controller?: boolean }>;
    deletionTimestamp?: string | Date;
  };
  spec?: {
    terminationGracePeriodSeconds?: number;
    volumes?: Array<{ emptyDir?: unknown }>;
    tolerations?: Toleration[];
    priority?: number;
    priorityClassName?: string;
  };
  status?: { phase?: string };
}

/** The PodView of a pod object of the API. */
export function podViewOf(pod: PodObject): PodView {
  const meta = pod.metadata ?? {};
  const deletion = meta.deletionTimestamp;
  const deletionMs =
    deletion === undefined ? undefined : deletion instanceof Date ? deletion.getTime() : Date.parse(deletion);
  return {
    namespace: meta.namespace ?? "default",
    name: meta.name ?? "",
    uid: meta.uid ?? "",
    labels: { ...meta.labels },
    annotations: { ...meta.annotations },
    controllerKinds: (meta.ownerReferences ?? []).filter((o) => o.controller === true).map((o) => o.kind),
    phase: pod.status?.phase ?? "",
    terminationGracePeriodSeconds: pod.spec?.terminationGracePeriodSeconds,
    hasEmptyDir: (pod.spec?.volumes ?? []).some((v) => v.emptyDir !== undefined && v.emptyDir !== null),
    // An unreadable timestamp still means "being deleted": 0 makes it count as past its grace (never a wait forever).
    deletionTimestampMs: Number.isNaN(deletionMs) ? 0 : deletionMs,
    tolerations: (pod.spec?.tolerations ?? []).map((t) => ({ ...t })),
    priority: pod.spec?.priority ?? 0,
    priorityClassName: pod.spec?.priorityClassName ?? "",
  };
}

/** The priority from which a pod is system-critical (Kubernetes' SystemCriticalPriority, 2 000 000 000). */
export const systemCriticalPriority = 2_000_000_000;

/** A pod of the system-critical priority classes (or their priority): evicted last, as Karpenter does. */
export function isSystemCritical(pod: Pick<PodView, "priority" | "priorityClassName">): boolean {
  return (
    pod.priority >= systemCriticalPriority ||
    pod.priorityClassName === "system-cluster-critical" ||
    pod.priorityClassName === "system-node-critical"
  );
}

export const podRef = (pod: Pick<PodView, "namespace" | "name">): string => `${pod.namespace}/${pod.name}`;

/** A pod's identity across restarts and comebacks: its uid (namespace/name when the API gave none). */
export const podIdentity = (pod: Pick<PodView, "namespace" | "name" | "uid">): string => pod.uid || podRef(pod);

/**
 * The label a pod opts out of sef's drains with (`sef.azure.com/drain: skip`): the owner's explicit choice, so the
 * drain completes without it (named in Detail as `podsOptedOut`); the reboot still stops it.
 */
export const drainOptOutLabel = { key: "sef.azure.com/drain", value: "skip" } as const;

/**
 * How long after its deletionTimestamp (deletion began + grace) a terminating pod is still waited for: kubelet and API
 * server take a moment to remove a pod whose containers stopped on time; a pod later than this is stuck (a finalizer,
 * a kubelet that is gone) and does not hold the drain, as with `kubectl drain --skip-wait-for-delete-timeout`.
 */
export const stuckTerminatingAllowanceMs = 10_000;

/** Whether the toleration tolerates the taint (Kubernetes' ToleratesTaint: empty key or effect match any). */
export function toleratesTaint(toleration: Toleration, taint: Pick<Taint, "key" | "value" | "effect">): boolean {
  if (toleration.effect && toleration.effect !== taint.effect) return false;
  if (toleration.key && toleration.key !== taint.key) return false;
  const operator = toleration.operator ?? "";
  if (operator === "Exists") return true;
  if (operator === "" || operator === "Equal") return (toleration.value ?? "") === (taint.value ?? "");
  return false;
}

export type SkipReason =
  "daemonset" | "mirror" | "self" | "finished" | "opted-out" | "tolerating-arrival" | "no-controller" | "emptydir";

/** What decides which pods of the node a drain evicts. */
export interface DrainRules {
  /** sef's own pod (never evicted). */
  self: { namespace: string; name: string } | undefined;
  evictEmptyDir: boolean;
  /** Evict pods without a controller too (`kubectl drain --force`): nothing recreates them elsewhere. */
  force: boolean;
  /** sef's NoSchedule taint of this event: a pod that arrives after the drain started and tolerates it is left. */
  taint: Pick<Taint, "key" | "value" | "effect">;
  /** Identities (podIdentity) of the pods on the node when the drain started; undefined: every pod counts as such. */
  roster: ReadonlySet<string> | undefined;
  /** Identities of the pods evicted during this drain: never evicted again. */
  evicted: ReadonlySet<string>;
  /** Wall-clock now (deletionTimestamp is a wall-clock time). */
  nowMs: number;
  /**
   * The soonest deadline of the events acting on the node (wall ms): a terminating pod whose deletionTimestamp is
   * later is asked again with a shorter grace. Undefined: none.
   */
  graceDeadlineMs?: number;
}

export interface EvictionSelection {
  /** Pods to evict now (not yet asked, or asked and refused), lowest priority first. */
  evict: PodView[];
  /** System-critical pods to evict once every other pod to evict is gone. */
  deferred: PodView[];
  /** Terminating pods whose grace ends after the soonest deadline: asked again with a shorter one. */
  shorterGrace: PodView[];
  /** Pods on their way out within their grace period (plus the allowance): waited for. */
  terminating: PodView[];
  /** Pods being deleted past their grace period plus the allowance: named, not waited for. */
  stuck: PodView[];
  /** Pods left on the node on purpose, with the reason. */
  skipped: Array<{ pod: PodView; reason: SkipReason }>;
}

/** Sorts every pod of the node into evict, terminating (waited for), stuck (not waited for) and skipped. */
export function selectEvictions(pods: readonly PodView[], rules: DrainRules): EvictionSelection {
  const selection: EvictionSelection = {
    evict: [],
    deferred: [],
    shorterGrace: [],
    terminating: [],
    stuck: [],
    skipped: [],
  };
  for (const pod of pods) {
    const reason = keptReason(pod, rules);
    if (reason !== undefined) selection.skipped.push({ pod, reason });
    else if (pod.deletionTimestampMs !== undefined)
      (rules.nowMs > pod.deletionTimestampMs + stuckTerminatingAllowanceMs
        ? selection.stuck
        : selection.terminating
      ).push(pod);
    else if (rules.evicted.has(podIdentity(pod)))
      selection.terminating.push(pod); // accepted once: waited for, never asked again
    else {
      const choice = choiceReason(pod, rules);
      if (choice !== undefined) selection.skipped.push({ pod, reason: choice });
      else selection.evict.push(pod);
    }
  }
  selection.shorterGrace = selection.terminating.filter((pod) => outlastsDeadline(pod, rules));
  return byPriority(selection);
}

/** Whether the terminating pod's grace ends more than a second after what the soonest deadline allows it. */
function outlastsDeadline(pod: PodView, rules: DrainRules): boolean {
  if (rules.graceDeadlineMs === undefined || pod.deletionTimestampMs === undefined) return false;
  const allowedMs = Math.max(1_000, rules.graceDeadlineMs - rules.nowMs);
  return pod.deletionTimestampMs - rules.nowMs > allowedMs + 1_000;
}

/** Lowest priority first; system-critical pods deferred while any other pod is to evict or terminating. */
function byPriority(selection: EvictionSelection): EvictionSelection {
  const sorted = [...selection.evict].sort((a, b) => a.priority - b.priority);
  const critical = sorted.filter(isSystemCritical);
  const others = sorted.filter((pod) => !isSystemCritical(pod));
  const othersGoing = others.length > 0 || selection.terminating.some((pod) => !isSystemCritical(pod));
  return othersGoing ? { ...selection, evict: others, deferred: critical } : { ...selection, evict: sorted };
}

/** Pods that stay whatever happens: their controller or the kubelet would put them back, or they are done. */
function keptReason(pod: PodView, rules: DrainRules): SkipReason | undefined {
  if (pod.controllerKinds.includes("DaemonSet")) return "daemonset";
  if ("kubernetes.io/config.mirror" in pod.annotations) return "mirror";
  if (rules.self !== undefined && pod.namespace === rules.self.namespace && pod.name === rules.self.name) return "self";
  if (pod.phase === "Succeeded" || pod.phase === "Failed") return "finished";
  return undefined;
}

/** Pods left by a choice: the owner's label, a tolerating arrival, no controller without force, emptyDir when not allowed. */
function choiceReason(pod: PodView, rules: DrainRules): SkipReason | undefined {
  if (pod.labels[drainOptOutLabel.key] === drainOptOutLabel.value) return "opted-out";
  const arrived = rules.roster !== undefined && !rules.roster.has(podIdentity(pod));
  if (arrived && pod.tolerations.some((t) => toleratesTaint(t, rules.taint))) return "tolerating-arrival";
  if (pod.controllerKinds.length === 0 && !rules.force) return "no-controller";
  if (pod.hasEmptyDir && !rules.evictEmptyDir) return "emptydir";
  return undefined;
}

export const skippedFor = (selection: EvictionSelection, reason: SkipReason): string[] =>
  selection.skipped
    .filter((s) => s.reason === reason)
    .map((s) => podRef(s.pod))
    .sort();

/** Where a drain stands after a look at the node's pods. */
export type DrainVerdict =
  { kind: "continue" } | { kind: "drained" } | { kind: "incomplete"; podsLeft: string[]; reason: string };

/** Pods a drain leaves that the event would take down with the node: they make the drain incomplete. */
const leftBehind: ReadonlyArray<{ reason: SkipReason; why: string }> = [
  { reason: "no-controller", why: "pods without a controller are not evicted unless force is set" },
  { reason: "emptydir", why: "pods with emptyDir volumes are not evicted (evictEmptyDir is false)" },
];

/**
 * Over when nothing is left to evict or wait for: drained, unless pods stay that the event takes down (no controller
 * without force, emptyDir without evictEmptyDir, stuck terminating: incomplete, named, so nothing approves early); at
 * the deadline, incomplete with every pod left.
 */
export function drainVerdict(selection: EvictionSelection, nowMs: number, deadlineMs: number): DrainVerdict {
  const left = leftBehind.filter((l) => skippedFor(selection, l.reason).length > 0);
  const leftPods = [...left.flatMap((l) => skippedFor(selection, l.reason)), ...selection.stuck.map(podRef)];
  if (selection.evict.length === 0 && selection.terminating.length === 0 && selection.deferred.length === 0) {
    if (leftPods.length === 0) return { kind: "drained" };
    const whys = [...left.map((l) => l.why), ...(selection.stuck.length > 0 ? ["pods are stuck terminating"] : [])];
    return { kind: "incomplete", podsLeft: [...new Set(leftPods)].sort(), reason: whys.join("; ") };
  }
  if (nowMs < deadlineMs) return { kind: "continue" };
  const going = [...selection.evict, ...selection.deferred, ...selection.terminating].map(podRef);
  return { kind: "incomplete", podsLeft: [...new Set([...going, ...leftPods])].sort(), reason: "at its deadline" };
}
