// What the collector remembers between documents (persisted by the store after every document).
import type { EventFields, ImdsEventStatus } from "@sef/contract/record.js";
import { EmittedKeys } from "./emitted-keys.js";

export interface TrackedEvent {
  fields: EventFields;
  status: ImdsEventStatus;
  lastSeenMs: number;
}

export type { EmittedKey } from "./emitted-keys.js";

export interface CollectorState {
  lastIncarnation: number | null;
  lastDocumentHash: string | null;
  lastSuccessMs: number | null;
  /** Set when watching was interrupted (restart, failed poll) and cleared by the next processed document. */
  interrupted: boolean;
  /** Events in the last processed document, keyed by lower-cased EventId. */
  events: Map<string, TrackedEvent>;
  /**
   * `${lower-cased EventId}|${EventStatus}` → when it was emitted; the at-most-once guard across restarts. A view over
   * a map shared with earlier states (emitted-keys.ts): a document's state carries only what it changed.
   */
  emitted: EmittedKeys;
}

export function emptyCollectorState(): CollectorState {
  return {
    lastIncarnation: null,
    lastDocumentHash: null,
    lastSuccessMs: null,
    interrupted: false,
    events: new Map(),
    emitted: EmittedKeys.from(),
  };
}

export function emittedKey(eventId: string, status: string): string {
  return `${eventId.toLowerCase()}|${status}`;
}
