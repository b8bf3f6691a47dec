// Reads one Event Hubs event body as a contract record: the fleet consumer's only input. Malformed JSON, records of an
// unknown contract version and records that fail the contract become a named rejection, never an exception.
import * as z from "zod/mini";
import "../agent/util/zod-locale.js";
import { recordTypes, type EventStatus } from "@sef/contract/record.js";

/** The contract versions this consumer understands (records carry no version field in v1: absent means 1). */
export const supportedContractVersions = [1] as const;

const transitionSchema = z.object({
  RecordId: z.string().check(z.minLength(1)),
  RecordType: z.literal("Transition"),
  TimeGenerated: z.string().check(z.minLength(1)),
  EventId: z.string().check(z.minLength(1)),
  EventStatus: z.enum(["Scheduled", "Started", "Completed", "Canceled"]),
  EventType: z.string(),
  EventSource: z.string(),
  Resources: z.array(z.string()),
  NotBefore: z.nullable(z.string()),
  Description: z.string(),
  DurationInSeconds: z.number().check(z.int()),
  AffectsThisVm: z.boolean(),
  VmName: z.string(),
  VmId: z.string(),
  /** The reporting installation (contract: AgentId); older agents did not send it. */
  AgentId: z.optional(z.string()),
  ResourceGroup: z.string(),
  SubscriptionId: z.string(),
  Location: z.string(),
  VmScaleSetName: z.string(),
  Zone: z.string(),
  /** The VM's resource tags; records of older agents have none, and a value that is not {name: string} is ignored. */
  Tags: z.catch(z.optional(z.record(z.string(), z.string())), undefined),
});

/** The fields of a Transition record the fleet view uses. */
export type FleetTransition = z.infer<typeof transitionSchema> & { EventStatus: EventStatus };

export type RecordInput =
  | { readonly kind: "transition"; readonly record: FleetTransition }
  /** A valid record of another type (Heartbeat, Approval, Hook): not folded, not an error. */
  | { readonly kind: "other"; readonly recordType: string }
  | { readonly kind: "rejected"; readonly reason: "malformed-json" | "unknown-version" | "contract" | "not-a-record"; readonly detail: string };

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
    return { kind: "rejected", reason: "not-a-record", detail: `body is ${Array.isArray(value) ? "an array" : typeof value}` };
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
  const parsed = transitionSchema.safeParse(object);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    return { kind: "rejected", reason: "contract", detail: `${issue.path.join(".") || "(record)"}: ${issue.message}` };
  }
  return { kind: "transition", record: parsed.data as FleetTransition };
}
