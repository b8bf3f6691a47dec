// The "document read" signal: after each successful poll whose document the collect stage adopted (its transitions
// committed and announced first), the EventIds the document lists go to the stages that follow it (the act stage, for
// actions that compare what they left in the world with what IMDS still lists). A failed poll announces nothing.
import type { ScheduledEventsDocument } from "../imds/document.js";
import { Signal } from "../util/signal.js";

/** The EventIds of each document read, to the followers in the order they subscribed. */
export class DocumentsRead extends Signal<readonly string[]> {}

/**
 * Every EventId the document lists (readable events and unreadable ones that still carry an id), or undefined when
 * an event's EventId cannot be read: such a document does not say which events are gone, so it is not announced.
 */
export function listedEventIds(document: ScheduledEventsDocument): string[] | undefined {
  const malformed = document.Malformed ?? [];
  if (malformed.some((m) => m.eventId === null)) return undefined;
  return [...document.Events.map((e) => e.EventId), ...malformed.map((m) => m.eventId as string)];
}
