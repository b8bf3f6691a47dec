// Parses an IMDS scheduled-events body of any api-version into normalized events (pure; no I/O).
// A body that is not a valid document is an error, never "no events"; one unreadable event is set apart, never fatal.
import type { EventFields, ImdsEventStatus, MalformedEventReason } from "@sef/contract/record.js";
import { SefError, SefReasonError } from "@sef/errors/sef-error.js";

export interface ImdsEvent extends EventFields {
  EventStatus: ImdsEventStatus;
}

/** One event the document carried that cannot be read; kept raw so it can still be forwarded. */
export interface MalformedImdsEvent {
  /** Position in the document's Events array. */
  index: number;
  /** The EventId when it is a non-empty string, else null. */
  eventId: string | null;
  reason: MalformedEventReason;
  /** What is wrong, naming the field. */
  problem: string;
  /** The event exactly as IMDS sent it (parsed JSON). */
  raw: unknown;
}

export interface ScheduledEventsDocument {
  DocumentIncarnation: number;
  /** The events that could be read. */
  Events: ImdsEvent[];
  /** Events that could not be read (absent = none); they never make the whole document fail. */
  Malformed?: MalformedImdsEvent[];
}

export class MalformedDocumentError extends SefError {
  override readonly name = "MalformedDocumentError";
  override readonly code = "SEF_ERR_IMDS_MALFORMED_DOCUMENT";
}

/** One event of a document is unreadable; the rest of the document is still used. */
export class MalformedEventError extends SefReasonError<MalformedEventReason> {
  override readonly name = "MalformedEventError";
  override readonly code = "SEF_ERR_IMDS_MALFORMED_EVENT";
}

/** RFC 1123 (`Mon, 11 Apr 2022 22:26:58 GMT`) or ISO 8601 → ISO 8601 UTC; "" → null. Unparseable → error. */
export function parseNotBefore(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== "string")
    throw new MalformedEventError("not_before", `NotBefore is not a string: ${JSON.stringify(value)}`);
  const text = value.trim();
  if (text === "") return null;
  const ms = Date.parse(text);
  if (Number.isNaN(ms))
    throw new MalformedEventError("not_before", `NotBefore is not a date: ${JSON.stringify(value)}`);
  return new Date(ms).toISOString();
}

/** Pre-2017-08-01 api-versions prefix resource names with `_`. */
export function normalizeResourceName(name: string): string {
  return name.startsWith("_") ? name.slice(1) : name;
}

function optionalString(event: Record<string, unknown>, field: string): string {
  const value = event[field];
  if (value === undefined || value === null) return "";
  if (typeof value !== "string")
    throw new MalformedEventError("field_type", `${field} is not a string: ${JSON.stringify(value)}`);
  return value;
}

/** Reads one event; throws MalformedEventError naming the first bad field. Unknown EventType/EventSource values are kept as they are. */
export function parseEvent(raw: unknown): ImdsEvent {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw))
    throw new MalformedEventError("not_an_object", "event is not a JSON object");
  const event = raw as Record<string, unknown>;
  const eventId = event.EventId;
  if (typeof eventId !== "string" || eventId.trim() === "")
    throw new MalformedEventError("event_id", "EventId is missing or not a string");
  const status = event.EventStatus;
  if (status !== "Scheduled" && status !== "Started") {
    throw new MalformedEventError(
      "event_status",
      `EventStatus is ${JSON.stringify(status)}, expected Scheduled or Started`,
    );
  }
  const resources = event.Resources ?? [];
  if (!Array.isArray(resources) || resources.some((r) => typeof r !== "string")) {
    throw new MalformedEventError(
      "resources",
      `Resources is not an array of strings: ${JSON.stringify(event.Resources)}`,
    );
  }
  // IMDS always sends NotBefore (empty once Started); a Scheduled event without it has no start time to act on.
  if (status === "Scheduled" && !("NotBefore" in event))
    throw new MalformedEventError("not_before", "NotBefore is missing");
  const duration = event.DurationInSeconds;
  let durationInSeconds = -1;
  if (duration !== undefined && duration !== null) {
    const n = typeof duration === "string" && duration.trim() !== "" ? Number(duration) : duration;
    if (typeof n !== "number" || !Number.isInteger(n))
      throw new MalformedEventError("duration", `DurationInSeconds is not an integer: ${JSON.stringify(duration)}`);
    durationInSeconds = n;
  }
  return {
    EventId: eventId,
    EventStatus: status,
    EventType: optionalString(event, "EventType"),
    ResourceType: optionalString(event, "ResourceType"),
    Resources: (resources as string[]).map(normalizeResourceName),
    NotBefore: parseNotBefore(event.NotBefore),
    Description: optionalString(event, "Description"),
    EventSource: optionalString(event, "EventSource"),
    DurationInSeconds: durationInSeconds,
  };
}

function rawEventId(raw: unknown): string | null {
  const id = (raw as Record<string, unknown> | null)?.EventId;
  return typeof id === "string" && id.trim() !== "" ? id : null;
}

/**
 * Parses the raw body text. Document-level problems (not JSON, no Events array, bad DocumentIncarnation) throw
 * MalformedDocumentError; a bad event is set apart in `Malformed` and the other events are read as usual.
 */
export function parseScheduledEventsDocument(body: string): ScheduledEventsDocument {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch (err) {
    throw new MalformedDocumentError(`body is not JSON: ${(err as Error).message}`);
  }
  if (typeof json !== "object" || json === null || Array.isArray(json))
    throw new MalformedDocumentError("body is not a JSON object");
  const doc = json as Record<string, unknown>;
  const incarnation = doc.DocumentIncarnation;
  if (typeof incarnation !== "number" || !Number.isInteger(incarnation) || incarnation < 0) {
    throw new MalformedDocumentError("DocumentIncarnation is missing or not a non-negative integer");
  }
  if (!Array.isArray(doc.Events)) throw new MalformedDocumentError("Events is missing or not an array");
  const events: ImdsEvent[] = [];
  const malformed: MalformedImdsEvent[] = [];
  const seen = new Set<string>();
  doc.Events.forEach((raw: unknown, index) => {
    try {
      const event = parseEvent(raw);
      const key = event.EventId.toLowerCase();
      if (seen.has(key)) throw new MalformedEventError("duplicate_event_id", `EventId ${event.EventId} appears twice`);
      seen.add(key);
      events.push(event);
    } catch (err) {
      if (!(err instanceof MalformedEventError)) throw err;
      malformed.push({
        index,
        eventId: rawEventId(raw),
        reason: err.reason,
        problem: `Events[${index}]: ${err.message}`,
        raw,
      });
    }
  });
  return malformed.length > 0
    ? { DocumentIncarnation: incarnation, Events: events, Malformed: malformed }
    : { DocumentIncarnation: incarnation, Events: events };
}

/** Parses instance/compute into the VM identity fields records carry. */
export function parseCompute(body: string): import("@sef/contract/record.js").VmIdentity {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch (err) {
    throw new MalformedDocumentError(`compute body is not JSON: ${(err as Error).message}`);
  }
  if (typeof json !== "object" || json === null) throw new MalformedDocumentError("compute body is not a JSON object");
  const c = json as Record<string, unknown>;
  const s = (k: string): string => (typeof c[k] === "string" ? (c[k] as string) : "");
  return {
    VmName: s("name"),
    VmId: s("vmId"),
    VmResourceId: s("resourceId"),
    SubscriptionId: s("subscriptionId"),
    ResourceGroup: s("resourceGroupName"),
    Location: s("location"),
    VmScaleSetName: s("vmScaleSetName"),
    Zone: s("zone"),
    Tags: parseTags(c.tagsList, c.tags),
  };
}

/** Most tags a record carries (Azure allows 50 per resource); more are dropped. */
export const maxTags = 50;

/**
 * The VM's resource tags as `{name: value}`: from `tagsList` (an array of `{name, value}`, api-version 2019-06-04 and
 * later; values may contain `;` and `:`), else from `tags` (`"name:value;name2:value2"`, split at the first `:`).
 * Entries that are not strings are skipped; a name given twice keeps its first value. `{}` when there are none.
 */
export function parseTags(tagsList: unknown, tags: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  const add = (name: string, value: string): void => {
    if (name === "" || Object.hasOwn(out, name) || Object.keys(out).length >= maxTags) return;
    out[name] = value;
  };
  if (Array.isArray(tagsList)) {
    for (const entry of tagsList) {
      const { name, value } = (entry ?? {}) as { name?: unknown; value?: unknown };
      if (typeof name === "string" && typeof value === "string") add(name, value);
    }
    return out;
  }
  if (typeof tags === "string") {
    for (const pair of tags.split(";")) {
      const colon = pair.indexOf(":");
      if (colon < 0) add(pair, "");
      else add(pair.slice(0, colon), pair.slice(colon + 1));
    }
  }
  return out;
}
