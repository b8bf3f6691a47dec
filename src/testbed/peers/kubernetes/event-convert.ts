// Pure conversion between the two views of one stored Event, as the API server serves them: core/v1 (involvedObject,
// message, reportingComponent, count, ...) and events.k8s.io/v1 (regarding, note, reportingController,
// deprecatedCount, ...). The peer stores the core/v1 shape, with times normalised as the API server stores them.
import { kubeMicroTime, kubeTime, type KubeObject } from "./objects.js";
import { badRequest } from "./status.js";

type Fields = Record<string, unknown>;

/** Field pairs: [core/v1 name, events.k8s.io/v1 name]. */
const renamed: ReadonlyArray<readonly [string, string]> = [
  ["involvedObject", "regarding"],
  ["message", "note"],
  ["reportingComponent", "reportingController"],
  ["source", "deprecatedSource"],
  ["firstTimestamp", "deprecatedFirstTimestamp"],
  ["lastTimestamp", "deprecatedLastTimestamp"],
  ["count", "deprecatedCount"],
];
const shared = ["metadata", "eventTime", "series", "reportingInstance", "action", "reason", "related", "type"];

function isEmpty(value: unknown): boolean {
  return (
    value === undefined ||
    value === null ||
    value === "" ||
    value === 0 ||
    (typeof value === "object" && Object.keys(value).length === 0)
  );
}

export function toEventsV1(core: KubeObject): KubeObject {
  const source = core as unknown as Fields;
  const result: Fields = { apiVersion: "events.k8s.io/v1", kind: "Event" };
  for (const key of shared) if (source[key] !== undefined) result[key] = source[key];
  for (const [from, to] of renamed) if (!isEmpty(source[from])) result[to] = source[from];
  return result as unknown as KubeObject;
}

export function fromEventsV1(event: Fields): Fields {
  const result: Fields = { apiVersion: "v1", kind: "Event" };
  for (const key of shared) if (event[key] !== undefined) result[key] = event[key];
  for (const [to, from] of renamed) if (event[from] !== undefined) result[to] = event[from];
  result.source = result.source ?? {};
  result.firstTimestamp = result.firstTimestamp ?? null;
  result.lastTimestamp = result.lastTimestamp ?? null;
  result.involvedObject = result.involvedObject ?? {};
  return result;
}

function reformat(value: unknown, field: string, format: (epochMs: number) => string): string | null | undefined {
  if (value === undefined || value === null) return value;
  const epochMs = typeof value === "string" ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(epochMs))
    throw badRequest(
      `Event in version "v1" cannot be handled as a Event: ${field}: parsing time ${JSON.stringify(value)} failed`,
    );
  return format(epochMs);
}

/** Times as the API server stores them: Time fields to whole seconds, MicroTime fields to microseconds. */
export function normalizeEventTimes(core: Fields): Fields {
  const result: Fields = { ...core };
  for (const field of ["firstTimestamp", "lastTimestamp"])
    if (field in result) result[field] = reformat(result[field], field, kubeTime);
  if ("eventTime" in result) result.eventTime = reformat(result.eventTime, "eventTime", kubeMicroTime);
  const series = result.series as Fields | undefined;
  if (series && "lastObservedTime" in series)
    result.series = {
      ...series,
      lastObservedTime: reformat(series.lastObservedTime, "series.lastObservedTime", kubeMicroTime),
    };
  return result;
}
