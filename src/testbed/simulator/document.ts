// Renders the Scheduled Events document for one api-version, plus the deliberately broken bodies of fault steps.
import { documentShapeFor, type ScheduledEventsApiVersion } from "./api-versions.js";
import type { LiveEvent } from "./timeline.js";

export interface ImdsEvent {
  EventId: string;
  EventStatus: string;
  EventType: string;
  ResourceType: string;
  Resources: string[];
  NotBefore: string;
  Description?: string;
  EventSource?: string;
  DurationInSeconds?: number;
}

export interface ImdsDocument {
  DocumentIncarnation: number;
  Events: ImdsEvent[];
}

/** RFC 1123 time as IMDS writes it: `Mon, 11 Apr 2022 22:26:58 GMT` (whole seconds). */
export function formatRfc1123(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toUTCString();
}

export function renderDocument(
  snapshot: { incarnation: number; events: readonly LiveEvent[] },
  apiVersion: ScheduledEventsApiVersion,
): ImdsDocument {
  const shape = documentShapeFor(apiVersion);
  return {
    DocumentIncarnation: snapshot.incarnation,
    Events: snapshot.events.map((event) => {
      const out: ImdsEvent = {
        EventId: event.EventId,
        EventStatus: event.EventStatus,
        EventType: event.EventType,
        ResourceType: event.ResourceType,
        Resources: event.Resources.map((name) => (shape.underscoreResourceNames ? `_${name}` : name)),
        NotBefore:
          event.EventStatus === "Scheduled" && event.notBeforeMs !== null ? formatRfc1123(event.notBeforeMs) : "",
      };
      if (shape.hasDescription) out.Description = event.Description;
      if (shape.hasEventSource) out.EventSource = event.EventSource;
      if (shape.hasDurationInSeconds) out.DurationInSeconds = event.DurationInSeconds;
      return out;
    }),
  };
}

export type MalformedVariant = "truncated" | "html" | "empty" | "wrong-shape";
export const malformedVariants: readonly MalformedVariant[] = ["truncated", "html", "empty", "wrong-shape"];

/** A 200 body no client may take for a document (and must never read as "no events"). */
export function malformedBody(document: ImdsDocument, variant: MalformedVariant): string {
  switch (variant) {
    case "truncated": {
      const text = JSON.stringify(document);
      return text.slice(0, Math.max(1, Math.floor(text.length / 2)));
    }
    case "html":
      return "<html><head><title>502 Bad Gateway</title></head><body>Bad Gateway</body></html>";
    case "empty":
      return "";
    case "wrong-shape":
      return JSON.stringify({ DocumentIncarnation: document.DocumentIncarnation + 1000, Events: "unavailable" });
  }
}

/**
 * A valid JSON document of about `sizeBytes`: the real events followed by junk neighbour events (ids `huge-body-junk-N`).
 * A client that caps the body size refuses it; a client that does not would report the junk events.
 */
export function hugeBody(document: ImdsDocument, sizeBytes: number): string {
  const junk: ImdsEvent = {
    EventId: "",
    EventStatus: "Scheduled",
    EventType: "Reboot",
    ResourceType: "VirtualMachine",
    Resources: ["huge-body-neighbour"],
    NotBefore: "Mon, 11 Apr 2022 22:26:58 GMT",
    Description: "x".repeat(400),
    EventSource: "Platform",
    DurationInSeconds: -1,
  };
  const head = JSON.stringify(document).slice(0, -2); // drop the closing `]}`
  const parts: string[] = [head];
  let length = head.length;
  let index = 0;
  while (length < sizeBytes) {
    const text =
      (parts.length > 1 || document.Events.length > 0 ? "," : "") +
      JSON.stringify({ ...junk, EventId: `huge-body-junk-${index}` });
    parts.push(text);
    length += text.length;
    index += 1;
  }
  parts.push("]}");
  return parts.join("");
}
