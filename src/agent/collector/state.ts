// What the collector remembers between documents (persisted by the store after every document).
import type { EventFields, ImdsEventStatus } from "@sef/contract/record.js";

export interface TrackedEvent {
  fields: EventFields;
  status: ImdsEventStatus;
  lastSeenMs: number;
}

export interface EmittedKey {
  emittedMs: number;
  /** When the event ended (Completed/Canceled emitted); null while it is still in the document. */
  endedMs: number | null;
}

export interface CollectorState {
  lastIncarnation: number | null;
  lastDocumentHash: string | null;
  lastSuccessMs: number | null;
  /** Set when watching was interrupted (restart, failed poll) and cleared by the next processed document. */
  interrupted: boolean;
  /** Events in the last processed document, keyed by lower-cased EventId. */
  events: Map<string, TrackedEvent>;
  /** `${lower-cased EventId}|${EventStatus}` → when it was emitted; the at-most-once guard across restarts. */
  emitted: Map<string, EmittedKey>;
}

export function emptyCollectorState(): CollectorState {
  return { lastIncarnation: null, lastDocumentHash: null, lastSuccessMs: null, interrupted: false, events: new Map(), emitted: new Map() };
}

export function emittedKey(eventId: string, status: string): string {
  return `${eventId.toLowerCase()}|${status}`;
}
