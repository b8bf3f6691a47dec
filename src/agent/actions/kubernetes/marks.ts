// sef's marks on its Node (pure): each event's taint and its annotation `event.sef.azure.com/<EventId>` holding JSON
// (type, NotBefore, whether sef cordoned and labelled the node out of external load balancers, when the node
// drained), read back from a Node (today's and the previous
// release's keys), the patches that put them on, and the undo of the marks whose events are over. The Node is the
// truth for what sef left on it; the ledger is not needed to take it off.
import { excludeFromLoadBalancersLabel, knownEventTypes } from "./settings.js";
import {
  taintKeyFor,
  taintKeyPrefix,
  taintValueFor,
  type EventOnNode,
  type NodePatch,
  type NodeView,
  type Taint,
} from "./plan.js";

/**
 * One annotation per event: key `event.sef.azure.com/<taint-safe EventId>` (a DNS-subdomain prefix of sef's own and a
 * name of at most 63 characters, as the taint value; a GUID fits as is), value the JSON of `MarkValue`.
 */
export const markAnnotationPrefix = "event.sef.azure.com/";

/** The single-event annotations of the previous release: read (and removed with their event), never written. */
export const legacyAnnotationKeys = {
  eventId: "sef.azure.com/event-id",
  eventType: "sef.azure.com/event-type",
  notBefore: "sef.azure.com/not-before",
  cordoned: "sef.azure.com/cordoned",
} as const;

/** AKS node auto-drain's taint: while it is on the node, the cordon is AKS's too and sef never lifts it. */
export const aksAutoDrainTaintKey = "remediator.kubernetes.azure.com/unschedulable";

/** What a mark's annotation holds (JSON). */
export interface MarkValue {
  eventId: string;
  eventType: string;
  notBefore: string | null;
  /** The kubernetes policy sef took for the event (taint, cordon, drain, drain-then-approve). */
  policy: string;
  /** sef cordoned the node for this event (it was schedulable, or sef's own cordon was on it), in the same patch. */
  cordoned: boolean;
  /** When sef first marked the node for the event. */
  markedAt: string;
  /** sef put the exclude-from-external-load-balancers label on for this event (absent: it did not). */
  excludedLb?: boolean;
  /** When this node finished draining for the event (a complete drain), else absent. */
  drainedAt?: string;
}

/**
 * Everything sef left on the node for one event, as read back from the node: the mark's fields ("" or null where the
 * node does not say them: a taint alone, the previous release's annotations; eventId "" for a lone legacy cordon flag,
 * the taint value when only a taint is left), the annotation keys that carry it and sef's taints for it.
 */
export interface SefMark extends Omit<MarkValue, "drainedAt"> {
  drainedAt: string | null;
  /** The annotation keys that carry it (removed with it). */
  annotationKeys: string[];
  /** sef's taints for the event (either effect). */
  taints: Taint[];
}

/** The annotation key of an event's mark. */
export function markAnnotationKey(eventId: string): string {
  return `${markAnnotationPrefix}${taintValueFor(eventId)}`;
}

/** How marks, taints and EventIds are matched: the taint-safe EventId, case-insensitive. */
export const eventMatchKey = (eventId: string): string => taintValueFor(eventId).toLowerCase();

export function encodeMark(value: MarkValue): string {
  return JSON.stringify(value);
}

/** A mark's annotation value, or undefined when it is not the JSON sef writes (the key still says it is sef's). */
export function decodeMark(text: string): MarkValue | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    // Not JSON: no value of sef's (parsed stays undefined).
  }
  // Any JSON value: a field of a string, a number or an array reads as undefined.
  const v = parsed as Record<string, unknown> | null | undefined;
  if (typeof v?.eventId !== "string" || v.eventId === "") return undefined;
  return {
    eventId: v.eventId,
    eventType: typeof v.eventType === "string" ? v.eventType : "",
    notBefore: typeof v.notBefore === "string" && v.notBefore !== "" ? v.notBefore : null,
    policy: typeof v.policy === "string" ? v.policy : "",
    cordoned: v.cordoned === true,
    markedAt: typeof v.markedAt === "string" ? v.markedAt : "",
    ...(v.excludedLb === true ? { excludedLb: true } : {}),
    ...(typeof v.drainedAt === "string" && v.drainedAt !== "" ? { drainedAt: v.drainedAt } : {}),
  };
}

/** The EventType a taint key names (`…/scheduled-event-reboot` → `Reboot`; a type sef does not know stays as written). */
export function eventTypeOfTaintKey(key: string): string {
  const name = key.slice(taintKeyPrefix.length);
  return knownEventTypes.find((t) => t.toLowerCase() === name) ?? name;
}

const emptyMark = (eventId: string): SefMark => ({
  eventId,
  eventType: "",
  notBefore: null,
  policy: "",
  cordoned: false,
  markedAt: "",
  drainedAt: null,
  annotationKeys: [],
  taints: [],
});

/**
 * Adds what one annotation or taint says about an event's mark to the marks found so far: the first one read (the
 * annotations are read first) names the event, each field comes from the first that says it.
 */
function merge(marks: Map<string, SefMark>, part: SefMark): void {
  // A mark of no known event (eventId "") stays apart: an event's match key is never empty.
  const key = part.eventId && eventMatchKey(part.eventId);
  const mark = marks.get(key);
  marks.set(
    key,
    mark === undefined
      ? part
      : {
          eventId: mark.eventId,
          eventType: mark.eventType || part.eventType,
          notBefore: mark.notBefore ?? part.notBefore,
          policy: mark.policy || part.policy,
          cordoned: mark.cordoned || part.cordoned,
          markedAt: mark.markedAt || part.markedAt,
          ...(mark.excludedLb === true || part.excludedLb === true ? { excludedLb: true } : {}),
          drainedAt: mark.drainedAt ?? part.drainedAt,
          annotationKeys: [...mark.annotationKeys, ...part.annotationKeys],
          taints: [...mark.taints, ...part.taints],
        },
  );
}

/** The previous release's single-event annotations as one mark (a lone `cordoned` flag is a mark of no known event). */
function mergeLegacy(marks: Map<string, SefMark>, annotations: Readonly<Record<string, string>>): void {
  const keys = Object.values(legacyAnnotationKeys).filter((k) => k in annotations);
  if (keys.length === 0) return;
  merge(marks, {
    ...emptyMark(annotations[legacyAnnotationKeys.eventId] ?? ""),
    eventType: annotations[legacyAnnotationKeys.eventType] ?? "",
    notBefore: annotations[legacyAnnotationKeys.notBefore] || null,
    cordoned: annotations[legacyAnnotationKeys.cordoned] === "true",
    annotationKeys: keys,
  });
}

/** Every mark sef left on the node: its annotations (today's and the previous release's) and its taints, by event. */
export function marksOn(node: Pick<NodeView, "annotations" | "taints">): SefMark[] {
  const marks = new Map<string, SefMark>();
  for (const [key, text] of Object.entries(node.annotations)) {
    if (!key.startsWith(markAnnotationPrefix)) continue;
    // A value sef cannot read still marks the event its key names.
    const value = decodeMark(text);
    merge(marks, {
      ...emptyMark(key.slice(markAnnotationPrefix.length)),
      ...value,
      drainedAt: value?.drainedAt ?? null,
      annotationKeys: [key],
    });
  }
  mergeLegacy(marks, node.annotations);
  for (const taint of node.taints) {
    if (!taint.key.startsWith(taintKeyPrefix)) continue;
    merge(marks, { ...emptyMark(taint.value ?? ""), eventType: eventTypeOfTaintKey(taint.key), taints: [taint] });
  }
  return [...marks.values()];
}

/** Whether the mark is the event's (by taint-safe EventId, case-insensitive). */
export function isMarkOf(mark: Pick<SefMark, "eventId">, eventId: string): boolean {
  return mark.eventId !== "" && eventMatchKey(mark.eventId) === eventMatchKey(eventId);
}

/** The event's mark on the node, if any. */
export function markOf(node: Pick<NodeView, "annotations" | "taints">, eventId: string): SefMark | undefined {
  return marksOn(node).find((m) => isMarkOf(m, eventId));
}

/** The mark's annotation: its own key when it has one, else the key for the event. */
function annotationKeyFor(mark: SefMark | undefined, eventId: string): string {
  return mark?.annotationKeys.find((k) => k.startsWith(markAnnotationPrefix)) ?? markAnnotationKey(eventId);
}

function withTaint(
  node: Pick<NodeView, "taints">,
  event: Pick<EventOnNode, "EventId" | "EventType">,
  effect: "NoSchedule" | "NoExecute",
  nowIso: string,
): Taint[] {
  const key = taintKeyFor(event.EventType);
  const value = taintValueFor(event.EventId);
  const has = node.taints.some((t) => t.key === key && t.value === value && t.effect === effect);
  return has ? node.taints : [...node.taints, { key, value, effect, timeAdded: nowIso }];
}

/**
 * The first step, in one patch: the event's NoSchedule taint (kept if there), its annotation, and `unschedulable`
 * when the policy cordons. The annotation says whether sef cordoned: yes when the node is schedulable now, or when
 * the cordon on it is already sef's (another of sef's marks, or this event's from before a crash, claims it); an
 * operator's or AKS's cordon is never claimed. The exclude-from-external-load-balancers label (`excludeLb`) is put on
 * and claimed the same way: never someone else's. The node's other taints are kept (a merge patch replaces the list).
 */
export function markPatch(
  node: NodeView,
  event: EventOnNode,
  policy: string,
  cordon: boolean,
  nowIso: string,
  excludeLb = false,
): NodePatch {
  const marks = marksOn(node);
  const own = marks.find((m) => isMarkOf(m, event.EventId));
  const sefCordonOn = node.unschedulable && marks.some((m) => m.cordoned);
  const labelOn = node.labels?.[excludeFromLoadBalancersLabel] !== undefined;
  const claimLabel = excludeLb && (!labelOn || marks.some((m) => m.excludedLb === true));
  const value: MarkValue = {
    eventId: event.EventId,
    eventType: event.EventType,
    notBefore: event.NotBefore,
    policy,
    cordoned: cordon && (!node.unschedulable || sefCordonOn), // sefCordonOn: this event's own claim is among the marks
    markedAt: own?.markedAt || nowIso,
    ...(claimLabel ? { excludedLb: true } : {}),
    ...(own?.drainedAt ? { drainedAt: own.drainedAt } : {}),
  };
  return {
    taints: withTaint(node, event, "NoSchedule", nowIso),
    ...(cordon ? { unschedulable: true } : {}),
    annotations: { [annotationKeyFor(own, event.EventId)]: encodeMark(value) },
    ...(claimLabel && !labelOn ? { labels: { [excludeFromLoadBalancersLabel]: "true" } } : {}),
  };
}

/** After a complete drain, in one patch: the mark says when the node drained, and the NoExecute taint when configured. */
export function drainedPatch(
  node: NodeView,
  event: EventOnNode,
  policy: string,
  noExecute: boolean,
  nowIso: string,
): NodePatch {
  const own = markOf(node, event.EventId);
  const value: MarkValue = {
    eventId: event.EventId,
    eventType: event.EventType,
    notBefore: event.NotBefore,
    policy,
    cordoned: own?.cordoned === true,
    markedAt: own?.markedAt || nowIso,
    ...(own?.excludedLb === true ? { excludedLb: true } : {}),
    drainedAt: nowIso,
  };
  return {
    taints: noExecute ? withTaint(node, event, "NoExecute", nowIso) : node.taints,
    annotations: { [annotationKeyFor(own, event.EventId)]: encodeMark(value) },
  };
}

export interface UndoDecision {
  /** Undefined when none of the marks is on the node (nothing to patch). */
  patch: NodePatch | undefined;
  /** The marks taken off. */
  undone: SefMark[];
  /** The patch uncordons the node (a mark taken off claimed the cordon, and nothing else holds it). */
  uncordon: boolean;
  /** Why the node stays cordoned, when it is cordoned and stays so. */
  keptCordonedBecause: string | undefined;
}

/** Why a cordoned node stays cordoned, or undefined when sef lifts it. */
function keptCordonedReason(node: NodeView, claimed: boolean, keptClaims: number): string | undefined {
  if (!claimed) return "the node was cordoned before sef acted (an operator's cordon stays)";
  if (keptClaims > 0) return `another event sef acts on still holds the node (${keptClaims})`;
  if (node.taints.some((t) => t.key === aksAutoDrainTaintKey)) {
    return `AKS node auto-drain's taint ${aksAutoDrainTaintKey} is on the node: the cordon is AKS's too`;
  }
  return undefined;
}

/**
 * Takes the marks `undo` picks off the node, in one patch: their taints and annotations go (and the load-balancer
 * label, when a mark taken off claims it and none left does); the node is uncordoned
 * only when a mark taken off claims the cordon, no mark left claims it, and AKS node auto-drain's taint is not on it.
 * Everything that is not sef's (an operator's cordon, AKS's or other handlers' taints, other annotations) stays.
 */
export function undoMarks(node: NodeView, undo: (mark: SefMark) => boolean): UndoDecision {
  const marks = marksOn(node);
  const removed = marks.filter(undo);
  if (removed.length === 0) return { patch: undefined, undone: [], uncordon: false, keptCordonedBecause: undefined };
  const keptClaims = marks.filter((m) => !undo(m) && m.cordoned).length;
  const reason = node.unschedulable
    ? keptCordonedReason(
        node,
        removed.some((m) => m.cordoned),
        keptClaims,
      )
    : undefined;
  const uncordon = node.unschedulable && reason === undefined;
  const removedTaints = new Set(removed.flatMap((m) => m.taints));
  // The label goes with the last of sef's marks that claims it (never when only someone else's is on the node).
  const unlabel =
    node.labels?.[excludeFromLoadBalancersLabel] !== undefined &&
    removed.some((m) => m.excludedLb === true) &&
    !marks.some((m) => !undo(m) && m.excludedLb === true);
  const annotations: Record<string, null> = {};
  for (const key of removed.flatMap((m) => m.annotationKeys)) annotations[key] = null;
  return {
    patch: {
      taints: node.taints.filter((t) => !removedTaints.has(t)),
      ...(uncordon ? { unschedulable: false } : {}),
      annotations,
      ...(unlabel ? { labels: { [excludeFromLoadBalancersLabel]: null } } : {}),
    },
    undone: removed,
    uncordon,
    keptCordonedBecause: reason,
  };
}

/** The marks reconciliation takes off: those of events the document no longer lists and no node action of sef's still owns. */
export function orphanedMark(
  listedEventIds: readonly string[],
  ownedEventIds: readonly string[],
): (mark: SefMark) => boolean {
  const keep = new Set([...listedEventIds, ...ownedEventIds].map(eventMatchKey));
  return (mark) => mark.eventId === "" || !keep.has(eventMatchKey(mark.eventId));
}
