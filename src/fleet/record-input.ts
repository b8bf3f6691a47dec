// Reads one Event Hubs event body as a contract record: the fleet consumer's only input. Malformed JSON, records of an
// unknown contract version and records that fail the contract's validator (@sef/contract/record-validator.ts) become a
// named rejection, never an exception; a record whose Tags cannot be read is still folded, without them.
import { recordColumns, recordTypes } from "@sef/contract/record.js";
import { oversizeProblem } from "./record-limits.js";
import { transitionProblems, type ReadTransitionRecord } from "@sef/contract/record-validator.js";

/** The contract versions this consumer understands (records carry no version field in v1: absent means 1). */
export const supportedContractVersions = [1] as const;

/** The Transition records the fleet folds (older agents' records lack ObservedAt, Tags and AgentId). */
export type FleetTransition = ReadTransitionRecord;

export type RecordInput =
  | { readonly kind: "transition"; readonly record: FleetTransition }
  /** A valid record of another type (Heartbeat, Approval, Hook): not folded, not an error. */
  | { readonly kind: "other"; readonly recordType: string }
  | {
      readonly kind: "rejected";
      readonly reason: "malformed-json" | "unknown-version" | "contract" | "not-a-record" | "event-id" | "too-large";
      readonly detail: string;
      /** The record's EventId when it has a string one (whether or not it is a GUID). */
      readonly eventId?: string;
    };

/** The columns a record may hold null in (NotBefore): `""` there means null, as IMDS's own empty NotBefore does. */
const nullableColumns = recordColumns.filter((c) => c.nullable === true).map((c) => c.name);

/** `object` with `""` in a nullable column read as null (one reading of the contract for agent, fleet and KQL). */
function emptyAsNull(object: Record<string, unknown>): Record<string, unknown> {
  const empty = nullableColumns.filter((name) => object[name] === "");
  if (empty.length === 0) return object;
  return { ...object, ...Object.fromEntries(empty.map((name) => [name, null])) };
}

/** IMDS names every scheduled event by a GUID (`602d9444-d2cd-49c7-8624-8643e7171297`); nothing else is an EventId. */
const guid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isGuid(text: string): boolean {
  return guid.test(text);
}

/** A string from a record as a log line quotes it: JSON, at most 80 characters of it. */
export function quoted(text: string): string {
  return JSON.stringify(text.length > 80 ? `${text.slice(0, 80)}…` : text);
}

/** Interprets an event body as the SDK delivers it (parsed JSON object, Buffer/Uint8Array or string). */
export function readRecord(body: unknown): RecordInput {
  let value: unknown = body;
  if (body instanceof Uint8Array || typeof body === "string") {
    const text = typeof body === "string" ? body : Buffer.from(body).toString("utf8");
    try {
      value = JSON.parse(text);
    } catch (err) {
      return { kind: "rejected", reason: "malformed-json", detail: (err as Error).message };
    }
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return {
      kind: "rejected",
      reason: "not-a-record",
      detail: `body is ${Array.isArray(value) ? "an array" : typeof value}`,
    };
  }
  const object = value as Record<string, unknown>;
  const version = object.ContractVersion ?? 1;
  if (!supportedContractVersions.includes(version as 1)) {
    return { kind: "rejected", reason: "unknown-version", detail: `ContractVersion ${JSON.stringify(version)}` };
  }
  const recordType = object.RecordType;
  if (typeof recordType !== "string" || !(recordTypes as readonly string[]).includes(recordType)) {
    return { kind: "rejected", reason: "contract", detail: `RecordType ${JSON.stringify(recordType)}` };
  }
  if (recordType !== "Transition") return { kind: "other", recordType };
  return readTransition(emptyAsNull(object));
}

function readTransition(object: Record<string, unknown>): RecordInput {
  const eventId = typeof object.EventId === "string" ? { eventId: object.EventId } : {};
  const problems = transitionProblems(object);
  const fatal = problems.find((p) => p.column !== "Tags");
  if (fatal !== undefined)
    return { kind: "rejected", reason: "contract", detail: `${fatal.column}: ${fatal.problem}`, ...eventId };
  if (!isGuid(object.EventId as string)) {
    const detail = `EventId ${quoted(object.EventId as string)} is not a GUID`;
    return { kind: "rejected", reason: "event-id", detail, ...eventId };
  }
  const oversize = oversizeProblem(object);
  if (oversize !== undefined) return { kind: "rejected", reason: "too-large", detail: oversize, ...eventId };
  if (problems.length === 0) return { kind: "transition", record: object as unknown as FleetTransition };
  const { Tags: _unreadable, ...withoutTags } = object;
  return { kind: "transition", record: withoutTags as unknown as FleetTransition };
}
