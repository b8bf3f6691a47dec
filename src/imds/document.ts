// Parses an IMDS scheduled-events body of any api-version into normalized events (pure; no I/O).
// A body that is not a valid document is an error, never "no events".
import type { EventFields, ImdsEventStatus } from "../contract/record.js";

export interface ImdsEvent extends EventFields {
  EventStatus: ImdsEventStatus;
}

export interface ScheduledEventsDocument {
  DocumentIncarnation: number;
  Events: ImdsEvent[];
}

export class MalformedDocumentError extends Error {
  override readonly name = "MalformedDocumentError";
}

/** RFC 1123 (`Mon, 11 Apr 2022 22:26:58 GMT`) or ISO 8601 → ISO 8601 UTC; "" → null. Unparseable → error. */
export function parseNotBefore(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== "string") throw new MalformedDocumentError(`NotBefore is not a string: ${JSON.stringify(value)}`);
  const text = value.trim();
  if (text === "") return null;
  const ms = Date.parse(text);
  if (Number.isNaN(ms)) throw new MalformedDocumentError(`NotBefore is not a date: ${JSON.stringify(value)}`);
  return new Date(ms).toISOString();
}

/** Pre-2017-08-01 api-versions prefix resource names with `_`. */
export function normalizeResourceName(name: string): string {
  return name.startsWith("_") ? name.slice(1) : name;
}

function optionalString(event: Record<string, unknown>, field: string, index: number): string {
  const value = event[field];
  if (value === undefined || value === null) return "";
  if (typeof value !== "string") throw new MalformedDocumentError(`Events[${index}].${field} is not a string`);
  return value;
}

function parseEvent(raw: unknown, index: number): ImdsEvent {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) throw new MalformedDocumentError(`Events[${index}] is not an object`);
  const event = raw as Record<string, unknown>;
  const eventId = event.EventId;
  if (typeof eventId !== "string" || eventId.trim() === "") throw new MalformedDocumentError(`Events[${index}].EventId is missing`);
  const status = event.EventStatus;
  if (status !== "Scheduled" && status !== "Started") {
    throw new MalformedDocumentError(`Events[${index}].EventStatus is ${JSON.stringify(status)}, expected Scheduled or Started`);
  }
  const resources = event.Resources ?? [];
  if (!Array.isArray(resources) || resources.some((r) => typeof r !== "string")) {
    throw new MalformedDocumentError(`Events[${index}].Resources is not an array of strings`);
  }
  const duration = event.DurationInSeconds;
  let durationInSeconds = -1;
  if (duration !== undefined && duration !== null) {
    const n = typeof duration === "string" && duration.trim() !== "" ? Number(duration) : duration;
    if (typeof n !== "number" || !Number.isInteger(n)) throw new MalformedDocumentError(`Events[${index}].DurationInSeconds is not an integer`);
    durationInSeconds = n;
  }
  return {
    EventId: eventId,
    EventStatus: status,
    EventType: optionalString(event, "EventType", index),
    ResourceType: optionalString(event, "ResourceType", index),
    Resources: (resources as string[]).map(normalizeResourceName),
    NotBefore: parseNotBefore(event.NotBefore),
    Description: optionalString(event, "Description", index),
    EventSource: optionalString(event, "EventSource", index),
    DurationInSeconds: durationInSeconds,
  };
}

/** Parses the raw body text; throws MalformedDocumentError naming what is wrong. */
export function parseScheduledEventsDocument(body: string): ScheduledEventsDocument {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch (err) {
    throw new MalformedDocumentError(`body is not JSON: ${(err as Error).message}`);
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) throw new MalformedDocumentError("body is not a JSON object");
  const doc = json as Record<string, unknown>;
  const incarnation = doc.DocumentIncarnation;
  if (typeof incarnation !== "number" || !Number.isInteger(incarnation) || incarnation < 0) {
    throw new MalformedDocumentError("DocumentIncarnation is missing or not a non-negative integer");
  }
  if (!Array.isArray(doc.Events)) throw new MalformedDocumentError("Events is missing or not an array");
  const events = doc.Events.map(parseEvent);
  const seen = new Set<string>();
  for (const e of events) {
    const key = e.EventId.toLowerCase();
    if (seen.has(key)) throw new MalformedDocumentError(`EventId ${e.EventId} appears twice`);
    seen.add(key);
  }
  return { DocumentIncarnation: incarnation, Events: events };
}

/** Parses instance/compute into the VM identity fields records carry. */
export function parseCompute(body: string): import("../contract/record.js").VmIdentity {
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
  };
}
