// The fleet state of one Event Hubs partition (fleet events and what each target was told), what one batch changed in
// it, and the store a processor saves it to (`journal-state-store.ts` keeps it in Blob Storage).
import type { FleetEvent, VmStatus } from "./fleet-event.js";
import type { NotificationState } from "./notification-plan.js";
import { SefError } from "@sef/errors/sef-error.js";
import { dictOf, emptyDict, own } from "./safe-dict.js";

export interface PartitionState {
  /** Sequence number of the last event folded (-1 before any): events at or below it are never folded again. */
  sequenceNumber: number;
  /** By fleet-event key; every dictionary of the state has no prototype (keys come from records). */
  events: Record<string, FleetEvent>;
  /** Per fleet-event key, per target name. */
  notifications: Record<string, Record<string, NotificationState>>;
}

export function emptyPartitionState(): PartitionState {
  return { sequenceNumber: -1, events: emptyDict(), notifications: emptyDict() };
}

/** A copy of one fleet event whose Resources and VMs may be changed without touching `value` (read as JSON or held). */
export function ownEvent(value: unknown): FleetEvent {
  const event = value as FleetEvent;
  return { ...event, resources: [...event.resources], vms: dictOf<VmStatus>(event.vms) };
}

/** A state read as JSON (or held), deep-copied so every dictionary of it has no prototype. */
export function ownPartitionState(source: PartitionState): PartitionState {
  return {
    sequenceNumber: source.sequenceNumber,
    events: dictOf(source.events, ownEvent),
    notifications: dictOf(source.notifications, (states) => dictOf<NotificationState>(states)),
  };
}

/**
 * The working copy a batch changes: new dictionaries sharing every event and notification state with `source`. A fold
 * replaces an event it changes by a copy (`ownEvent`) and notification states are replaced, never changed, so what
 * differs from `source` afterwards is exactly what the batch changed (`changesBetween`).
 */
export function workingCopy(source: PartitionState): PartitionState {
  return {
    sequenceNumber: source.sequenceNumber,
    events: dictOf(source.events),
    notifications: dictOf(source.notifications),
  };
}

/** What one batch changed in a partition's state: the events and notification states it replaced, and those it forgot. */
export interface StateChanges {
  readonly sequenceNumber: number;
  readonly events: Readonly<Record<string, FleetEvent>>;
  readonly notifications: Readonly<Record<string, Record<string, NotificationState>>>;
  /** Keys of events (and their notification states) the batch forgot. */
  readonly removed: readonly string[];
}

/** The entries of `after` that are not `before`'s (by reference: see `workingCopy`), and the keys `after` dropped. */
export function changesBetween(before: PartitionState, after: PartitionState): StateChanges {
  const events = emptyDict<FleetEvent>();
  const notifications = emptyDict<Record<string, NotificationState>>();
  for (const [key, event] of Object.entries(after.events)) if (own(before.events, key) !== event) events[key] = event;
  for (const [key, states] of Object.entries(after.notifications))
    if (own(before.notifications, key) !== states) notifications[key] = states;
  const removed = new Set<string>();
  for (const key of Object.keys(before.events)) if (own(after.events, key) === undefined) removed.add(key);
  for (const key of Object.keys(before.notifications))
    if (own(after.notifications, key) === undefined) removed.add(key);
  return { sequenceNumber: after.sequenceNumber, events, notifications, removed: [...removed] };
}

/** Applies changes read back (a journal entry, as JSON) to `state`, in place. */
export function applyChanges(state: PartitionState, changes: StateChanges): void {
  state.sequenceNumber = changes.sequenceNumber;
  for (const key of changes.removed) {
    delete state.events[key];
    delete state.notifications[key];
  }
  for (const [key, event] of Object.entries(changes.events)) state.events[key] = ownEvent(event);
  for (const [key, states] of Object.entries(changes.notifications))
    state.notifications[key] = dictOf<NotificationState>(states);
}

/** Another instance wrote the state since we read it: the partition has moved. */
export class OwnershipLostError extends SefError {
  override readonly name = "OwnershipLostError";
  override readonly code = "SEF_ERR_FLEET_OWNERSHIP_LOST";
}

/** A partition's state as read, with the version (ETag) a save must match: `undefined` when there is no blob yet. */
export interface LoadedPartitionState {
  readonly state: PartitionState;
  readonly etag: string | undefined;
}

/**
 * Each holder of a partition keeps the version it read and saves against it: a holder whose copy is stale can never
 * overwrite a newer state (it gets OwnershipLostError and reads again), even within one process.
 */
export interface PartitionStateStore {
  load(partitionId: string): Promise<LoadedPartitionState>;
  /**
   * Saves `state` if the store is still at `version`; returns the new version. With `changes` (what differs from the
   * state of `version`) the store may write only those. The store may keep `state` and write it whole later (a
   * snapshot): a saved state is never changed afterwards (a batch changes a `workingCopy`).
   */
  save(
    partitionId: string,
    state: PartitionState,
    version: string | undefined,
    changes?: StateChanges,
  ): Promise<string | undefined>;
}
