// Pure conversion between the two views of one stored Event, as the API server serves them: core/v1 (involvedObject,
// message, reportingComponent, count, ...) and events.k8s.io/v1 (regarding, note, reportingController,
// deprecatedCount, ...). The peer stores the core/v1 shape.
import type { KubeObject } from "./objects.js";

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
  return value === undefined || value === null || value === "" || value === 0 || (typeof value === "object" && Object.keys(value).length === 0);
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
