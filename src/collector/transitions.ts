// The heart of sef: compares a fetched document with the last known state and yields transition records.
// Pure: no I/O, no clock; time, identity and the previous state come in as arguments.
import { createHash } from "node:crypto";
import type { EventFields, EventStatus, TransitionRecord, VmIdentity } from "../contract/record.js";
import { transitionRecordId } from "../contract/record-id.js";
import type { ScheduledEventsDocument, ImdsEvent } from "../imds/document.js";
import { emittedKey, type CollectorState, type TrackedEvent } from "./state.js";

export interface CollectContext {
  nowMs: number;
  vm: VmIdentity;
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
  /** False when the document equalled the last one processed (same incarnation and content). */
  changed: boolean;
}

/** Hash of a document's normalized events, so a reused incarnation (after a 24 h disable) is still diffed. */
export function documentHash(doc: ScheduledEventsDocument): string {
  const events = [...doc.Events].sort((a, b) => a.EventId.toLowerCase().localeCompare(b.EventId.toLowerCase()));
  return createHash("sha256").update(JSON.stringify(events)).digest("hex").slice(0, 32);
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

/** Applies one successfully fetched document. */
export function applyDocument(prev: CollectorState, doc: ScheduledEventsDocument, ctx: CollectContext): CollectResult {
  const hash = documentHash(doc);
  const gap = hasObservationGap(prev, doc, ctx);
  const emitted = pruneEmitted(prev.emitted, ctx.nowMs, ctx.emittedRetentionMs);

  if (prev.lastIncarnation === doc.DocumentIncarnation && prev.lastDocumentHash === hash) {
    return { state: { ...prev, emitted, lastSuccessMs: ctx.nowMs, interrupted: false }, records: [], changed: false };
  }

  const records: TransitionRecord[] = [];
  const events = new Map<string, TrackedEvent>();
  const emit = (fields: EventFields, status: EventStatus, previous: EventStatus | ""): void => {
    const key = emittedKey(fields.EventId, status);
    if (emitted.has(key)) return;
    emitted.set(key, { emittedMs: ctx.nowMs, endedMs: null });
    records.push(buildRecord(fields, status, previous, doc.DocumentIncarnation, gap, ctx));
  };

  // Endings first, so a reader sees one event finish before the next one in the same document moves.
  const present = new Set(doc.Events.map((e) => e.EventId.toLowerCase()));
  for (const [key, tracked] of prev.events) {
    if (present.has(key)) continue;
    const ended = endedStatus(tracked, gap, ctx.nowMs);
    emit(tracked.fields, ended, tracked.status);
    for (const status of ["Scheduled", "Started", "Completed", "Canceled"]) {
      const k = emittedKey(tracked.fields.EventId, status);
      const entry = emitted.get(k);
      if (entry) emitted.set(k, { ...entry, endedMs: ctx.nowMs });
    }
  }

  for (const event of doc.Events) {
    const key = event.EventId.toLowerCase();
    const tracked = prev.events.get(key);
    const fields = fieldsOf(event);
    let status = event.EventStatus;
    if (!tracked) {
      emit(fields, status, "");
    } else if (tracked.status === "Scheduled" && status === "Started") {
      emit(fields, "Started", "Scheduled");
    } else if (tracked.status === "Started" && status === "Scheduled") {
      status = "Started"; // IMDS never moves an event back; keep what was already reported
    }
    events.set(key, { fields, status, lastSeenMs: ctx.nowMs });
  }

  return {
    state: { lastIncarnation: doc.DocumentIncarnation, lastDocumentHash: hash, lastSuccessMs: ctx.nowMs, interrupted: false, events, emitted },
    records,
    changed: true,
  };
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

function pruneEmitted(emitted: Map<string, { emittedMs: number; endedMs: number | null }>, nowMs: number, retentionMs: number) {
  const kept = new Map(emitted);
  for (const [key, entry] of emitted) {
    if (entry.endedMs !== null && nowMs - entry.endedMs > Math.max(retentionMs, sevenDaysMs)) kept.delete(key);
  }
  return kept;
}

function buildRecord(
  fields: EventFields,
  status: EventStatus,
  previous: EventStatus | "",
  incarnation: number,
  gap: boolean,
  ctx: CollectContext,
): TransitionRecord {
  const observedAt = new Date(ctx.nowMs).toISOString();
  return {
    RecordId: transitionRecordId(ctx.vm.VmId, fields.EventId, status),
    RecordType: "Transition",
    TimeGenerated: observedAt,
    ObservedAt: observedAt,
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
    ...ctx.vm,
    AgentVersion: ctx.agentVersion,
  };
}
