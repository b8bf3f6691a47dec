// The heart of sef: compares a fetched document with the last known state and yields transition records.
// Pure: no I/O, no clock; time, identity and the previous state come in as arguments.
import { codeUnitOrder } from "../util/code-unit-order.js";
import { hash } from "node:crypto";
import {
  buildRecord,
  type EventFields,
  type EventStatus,
  type MalformedEventRecord,
  type RecordIdentity,
  type TransitionRecord,
} from "@sef/contract/record.js";
import { deterministicUuid, transitionRecordId } from "@sef/contract/record-id.js";
import {
  normalizeResourceName,
  type ScheduledEventsDocument,
  type ImdsEvent,
  type MalformedImdsEvent,
} from "../imds/document.js";
import { emittedKey, type CollectorState, type TrackedEvent } from "./state.js";
import type { EmittedKeys } from "./emitted-keys.js";

export interface CollectContext {
  nowMs: number;
  /** The VM and this installation (AgentId): every record carries them, and RecordIds are made from them. */
  vm: RecordIdentity;
  agentVersion: string;
  /** A pause between successful polls longer than this counts as an observation gap. */
  gapThresholdMs: number;
  /** How long emitted keys are kept after their event ended (at least 7 days). */
  emittedRetentionMs: number;
}

export const sevenDaysMs = 7 * 24 * 60 * 60 * 1000;

export interface CollectResult {
  state: CollectorState;
  records: TransitionRecord[];
  /** One record per malformed event not forwarded before (same EventId and same raw content are forwarded once). */
  malformed: MalformedEventRecord[];
  /** False when the document equalled the last one processed (same incarnation and content). */
  changed: boolean;
}

/** Hash of a document's normalized events, so a reused incarnation (after a 24 h disable) is still diffed. */
export function documentHash(doc: ScheduledEventsDocument): string {
  const events = [...doc.Events].sort((a, b) => codeUnitOrder(a.EventId.toLowerCase(), b.EventId.toLowerCase()));
  const malformed = (doc.Malformed ?? []).map((m) => rawHash(m.raw)).sort();
  const text = malformed.length === 0 ? JSON.stringify(events) : JSON.stringify([events, malformed]);
  return hash("sha256", text, "hex").slice(0, 32);
}

function rawHash(raw: unknown): string {
  return hash("sha256", JSON.stringify(raw) ?? "undefined", "hex").slice(0, 16);
}

/** Emitted-key of a malformed event: one record per (EventId, raw content); without an EventId, per raw content. */
export function malformedKey(m: MalformedImdsEvent): string {
  return emittedKey(m.eventId ?? "", `Malformed:${rawHash(m.raw)}`);
}

function affectsVm(resources: readonly string[], vmName: string): boolean {
  if (vmName === "") return false;
  const name = vmName.toLowerCase();
  return resources.some((r) => r.toLowerCase() === name);
}

function fieldsOf(event: ImdsEvent): EventFields {
  return {
    EventId: event.EventId,
    EventType: event.EventType,
    ResourceType: event.ResourceType,
    Resources: [...event.Resources],
    NotBefore: event.NotBefore,
    Description: event.Description,
    EventSource: event.EventSource,
    DurationInSeconds: event.DurationInSeconds,
  };
}

/** Whether watching was continuous between the previous successful document and this one. */
export function hasObservationGap(prev: CollectorState, doc: ScheduledEventsDocument, ctx: CollectContext): boolean {
  if (prev.lastSuccessMs === null) return false; // nothing seen before: nothing could have been missed
  if (prev.interrupted) return true;
  if (ctx.nowMs - prev.lastSuccessMs > ctx.gapThresholdMs) return true;
  return prev.lastIncarnation !== null && doc.DocumentIncarnation < prev.lastIncarnation; // service disabled and re-enabled
}

/** A transition the document implies, before the emitted keys say whether it was already forwarded. */
interface Candidate<R> {
  readonly key: string;
  readonly record: R;
  /** Null while its event is listed (an ending is marked later, with its event's other keys); a malformed sighting: now. */
  readonly endedMs: number | null;
}

/** What one document implies on its own: the events it tracks from now on and every transition it shows. */
interface DocumentMoves {
  events: Map<string, TrackedEvent>;
  records: Candidate<TransitionRecord>[];
  malformed: Candidate<MalformedEventRecord>[];
}

/** Applies one successfully fetched document. */
export function applyDocument(prev: CollectorState, doc: ScheduledEventsDocument, ctx: CollectContext): CollectResult {
  const hash = documentHash(doc);
  const gap = hasObservationGap(prev, doc, ctx);
  const emitted = prev.emitted.derive();
  pruneEmitted(emitted, ctx.nowMs, ctx.emittedRetentionMs);

  if (prev.lastIncarnation === doc.DocumentIncarnation && prev.lastDocumentHash === hash) {
    return {
      state: { ...prev, emitted, lastSuccessMs: ctx.nowMs, interrupted: false },
      records: [],
      malformed: [],
      changed: false,
    };
  }
  const moves = documentMoves(prev, doc, gap, ctx);
  // Dedupe on EventId + status last: each key is forwarded once, the first time a document shows its transition.
  const records = notYetEmitted(emitted, moves.records, ctx.nowMs);
  const malformed = notYetEmitted(emitted, moves.malformed, ctx.nowMs);
  markEnded(emitted, prev, moves.events, ctx.nowMs);
  return {
    state: {
      lastIncarnation: doc.DocumentIncarnation,
      lastDocumentHash: hash,
      lastSuccessMs: ctx.nowMs,
      interrupted: false,
      events: moves.events,
      emitted,
    },
    records,
    malformed,
    changed: true,
  };
}

/**
 * The transitions `doc` shows against `prev`, in the order they are forwarded: endings first, so a reader sees one
 * event finish before the next one in the same document moves; then new and started events; then malformed sightings.
 * An event that became unreadable is still present: it has not ended, and what was known of it is kept.
 */
function documentMoves(
  prev: CollectorState,
  doc: ScheduledEventsDocument,
  gap: boolean,
  ctx: CollectContext,
): DocumentMoves {
  const records: Candidate<TransitionRecord>[] = [];
  const move = (fields: EventFields, status: EventStatus, previous: EventStatus | ""): void => {
    records.push({
      key: emittedKey(fields.EventId, status),
      record: transitionRecord(fields, status, previous, doc.DocumentIncarnation, gap, ctx),
      endedMs: null,
    });
  };
  const malformedEvents = doc.Malformed ?? [];
  const present = new Set(
    [
      ...doc.Events.map((e) => e.EventId),
      ...malformedEvents.flatMap((m) => (m.eventId === null ? [] : [m.eventId])),
    ].map((id) => id.toLowerCase()),
  );
  for (const [key, tracked] of prev.events) {
    if (!present.has(key)) move(tracked.fields, endedStatus(tracked, gap, ctx.nowMs), tracked.status);
  }
  const events = new Map<string, TrackedEvent>();
  for (const event of doc.Events) {
    const key = event.EventId.toLowerCase();
    const tracked = prev.events.get(key);
    const fields = fieldsOf(event);
    let status = event.EventStatus;
    if (!tracked) {
      move(fields, status, "");
    } else if (tracked.status === "Scheduled" && status === "Started") {
      move(fields, "Started", "Scheduled");
    } else if (tracked.status === "Started" && status === "Scheduled") {
      status = "Started"; // IMDS never moves an event back; keep what was already reported
    }
    events.set(key, { fields, status, lastSeenMs: ctx.nowMs });
  }
  // A tracked event listed again but unreadable is kept as it was known (unless a readable copy is listed too).
  for (const [key, tracked] of prev.events) {
    if (present.has(key) && !events.has(key)) events.set(key, { ...tracked, lastSeenMs: ctx.nowMs });
  }
  const malformed: Candidate<MalformedEventRecord>[] = [];
  for (const m of malformedEvents) {
    const key = malformedKey(m);
    // Nothing ends a malformed sighting: its key ages out after the retention period like an ended event's.
    malformed.push({ key, record: buildMalformedRecord(m, key, doc.DocumentIncarnation, ctx), endedMs: ctx.nowMs });
  }
  return { events, records, malformed };
}

/** The candidates whose key was never emitted, in order; their keys are emitted now (a key twice in one document: once). */
function notYetEmitted<R>(emitted: EmittedKeys, candidates: readonly Candidate<R>[], nowMs: number): R[] {
  const fresh: R[] = [];
  for (const { key, record, endedMs } of candidates) {
    if (emitted.has(key)) continue;
    emitted.set(key, { emittedMs: nowMs, endedMs });
    fresh.push(record);
  }
  return fresh;
}

/** Every key of an event `prev` tracked and the document no longer lists ends now (its retention starts), its ending's included. */
function markEnded(
  emitted: EmittedKeys,
  prev: CollectorState,
  events: ReadonlyMap<string, TrackedEvent>,
  nowMs: number,
): void {
  for (const [key, tracked] of prev.events) {
    if (events.has(key)) continue;
    for (const status of ["Scheduled", "Started", "Completed", "Canceled"]) {
      const k = emittedKey(tracked.fields.EventId, status);
      const entry = emitted.get(k);
      if (entry) emitted.set(k, { ...entry, endedMs: nowMs });
    }
  }
}

/** A failed poll changes nothing but the knowledge that watching was interrupted. */
export function applyPollFailure(prev: CollectorState): CollectorState {
  return prev.interrupted ? prev : { ...prev, interrupted: true };
}

/** State loaded after a restart: whatever happened while the agent was down is an observation gap. */
export function resumeAfterRestart(prev: CollectorState): CollectorState {
  return { ...prev, interrupted: true };
}

/** Started → Completed; Scheduled → Canceled, unless it most likely ran unseen during a gap. */
function endedStatus(tracked: TrackedEvent, gap: boolean, nowMs: number): EventStatus {
  if (tracked.status === "Started") return "Completed";
  const notBeforeMs = tracked.fields.NotBefore === null ? null : Date.parse(tracked.fields.NotBefore);
  if (gap && notBeforeMs !== null && notBeforeMs <= nowMs) return "Completed";
  return "Canceled";
}

/** Forgets the keys of events that ended more than the retention ago (at least 7 days), here and in the table. */
function pruneEmitted(emitted: EmittedKeys, nowMs: number, retentionMs: number): void {
  emitted.expireBefore(nowMs - Math.max(retentionMs, sevenDaysMs));
}

/** The emitted keys a document may need that the collector does not hold: the caller reads them from the store. */
export interface EmittedToRecall {
  /** Lower-cased EventIds in the document the collector does not track: all of their keys. */
  readonly eventIds: readonly string[];
  /** Keys of the document's malformed events without an EventId. */
  readonly keys: readonly string[];
}

/**
 * What to recall before `applyDocument(prev, doc)`: memory holds every key of the events `prev` tracks (see
 * EmittedKeys.keepOnlyEvents), so only the document's other EventIds, and its malformed sightings without one.
 */
export function emittedToRecall(prev: CollectorState, doc: ScheduledEventsDocument): EmittedToRecall {
  const eventIds = new Set<string>();
  const keys: string[] = [];
  for (const event of doc.Events) eventIds.add(event.EventId.toLowerCase());
  for (const m of doc.Malformed ?? []) {
    if (m.eventId === null) keys.push(malformedKey(m));
    else eventIds.add(m.eventId.toLowerCase());
  }
  return { eventIds: [...eventIds].filter((id) => !prev.events.has(id)), keys };
}

function transitionRecord(
  fields: EventFields,
  status: EventStatus,
  previous: EventStatus | "",
  incarnation: number,
  gap: boolean,
  ctx: CollectContext,
): TransitionRecord {
  return buildRecord<TransitionRecord>(ctx, ctx.nowMs, (source) => transitionRecordId(source, fields.EventId, status), {
    RecordType: "Transition",
    EventId: fields.EventId,
    EventStatus: status,
    PreviousStatus: previous,
    EventType: fields.EventType,
    ResourceType: fields.ResourceType,
    Resources: [...fields.Resources],
    NotBefore: fields.NotBefore,
    Description: fields.Description,
    EventSource: fields.EventSource,
    DurationInSeconds: fields.DurationInSeconds,
    DocumentIncarnation: incarnation,
    AffectsThisVm: affectsVm(fields.Resources, ctx.vm.VmName),
    ObservationGap: gap,
  });
}

function buildMalformedRecord(
  m: MalformedImdsEvent,
  key: string,
  incarnation: number,
  ctx: CollectContext,
): MalformedEventRecord {
  const raw =
    typeof m.raw === "object" && m.raw !== null && !Array.isArray(m.raw) ? (m.raw as Record<string, unknown>) : {};
  const text = (field: string): string => (typeof raw[field] === "string" ? (raw[field] as string) : "");
  const resources =
    Array.isArray(raw.Resources) && raw.Resources.every((r) => typeof r === "string")
      ? (raw.Resources as string[]).map(normalizeResourceName)
      : [];
  const recordId = (source: string): string => deterministicUuid("MalformedEvent", source, key);
  return buildRecord<MalformedEventRecord>(ctx, ctx.nowMs, recordId, {
    RecordType: "MalformedEvent",
    EventId: m.eventId ?? "",
    EventStatus: text("EventStatus"),
    EventType: text("EventType"),
    ResourceType: text("ResourceType"),
    Resources: resources,
    Description: text("Description"),
    EventSource: text("EventSource"),
    DocumentIncarnation: incarnation,
    AffectsThisVm: affectsVm(resources, ctx.vm.VmName),
    Outcome: m.reason,
    Detail: JSON.stringify({ problem: m.problem, event: m.raw }),
  });
}
