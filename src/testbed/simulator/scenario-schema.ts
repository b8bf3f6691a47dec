// The scenario file format (a JSON timeline for `sef-testbed simulate`), validated with zod: a bad file names the bad field.
import { z } from "zod";

/** One event as a scenario step lists it. Later steps may repeat only `EventId` (and what changes). */
export const scenarioEventSchema = z.strictObject({
  EventId: z.string().min(1),
  /** Required on the event's first appearance; later appearances inherit it. Same for the other IMDS fields. */
  EventType: z.string().min(1).optional(),
  /** Default on first appearance: `Scheduled`. */
  EventStatus: z.enum(["Scheduled", "Started"]).optional(),
  /** Default `VirtualMachine`. */
  ResourceType: z.string().min(1).optional(),
  Resources: z.array(z.string().min(1)).optional(),
  /** Default `""`. */
  Description: z.string().optional(),
  /** Default `Platform`. */
  EventSource: z.string().optional(),
  /** Default `-1` (unknown). */
  DurationInSeconds: z.number().int().min(-1).optional(),
  /** NotBefore, in scenario seconds after the step's `at` (default 900 on first appearance). */
  notBeforeInSeconds: z.number().min(0).optional(),
  /** How long the event stays Started before IMDS removes it, in scenario seconds (default: the scenario's `startedForSeconds`). */
  startedForSeconds: z.number().positive().optional(),
  /** Whether the event starts by itself when NotBefore passes while still Scheduled (default true, like IMDS). */
  autoStart: z.boolean().optional(),
});
export type ScenarioEvent = z.output<typeof scenarioEventSchema>;

/** How long a fault lasts: `forSeconds` of scenario time, or `count` requests (default: 1 request). */
const faultWindow = {
  forSeconds: z.number().positive().optional(),
  count: z.number().int().positive().optional(),
};

export const faultSchema = z.discriminatedUnion("kind", [
  z.strictObject({
    kind: z.literal("status"),
    status: z.number().int().min(400).max(599),
    /** Adds a `Retry-After` header (seconds) when set. */
    retryAfterSeconds: z.number().int().min(0).optional(),
    ...faultWindow,
  }),
  z.strictObject({
    kind: z.literal("malformed-json"),
    /** `rotate` (default) cycles truncated JSON, an HTML page, an empty body and a JSON object without `Events`. */
    variant: z.enum(["rotate", "truncated", "html", "empty", "wrong-shape"]).optional(),
    ...faultWindow,
  }),
  z.strictObject({
    kind: z.literal("huge-body"),
    /** Body size in bytes (default 8 MiB): the real document plus junk events a capped client must never see. */
    sizeBytes: z
      .number()
      .int()
      .min(1024)
      .max(256 * 1024 * 1024)
      .optional(),
    ...faultWindow,
  }),
  z.strictObject({
    kind: z.literal("slow"),
    /** Delay in scenario seconds (scaled by speed; default 120, the documented worst first call). */
    delaySeconds: z.number().min(0).optional(),
    /** Delay in wall-clock milliseconds (not scaled); wins over `delaySeconds`. */
    delayMs: z.number().int().min(0).optional(),
    ...faultWindow,
  }),
  z.strictObject({
    kind: z.literal("malformed-event"),
    /** Served verbatim after the document's real events (e.g. `Resources` as a string): one unreadable event in a valid document. */
    event: z.json(),
    ...faultWindow,
  }),
  z.strictObject({
    kind: z.literal("reset"),
    ...faultWindow,
  }),
]);
export type Fault = z.output<typeof faultSchema>;
export type FaultKind = Fault["kind"];

export const scenarioStepSchema = z
  .strictObject({
    /** Scenario seconds from the start. */
    at: z.number().min(0),
    /** The full list of events present from now on (events absent from it are removed). */
    events: z.array(scenarioEventSchema).optional(),
    /** The 24-hour disable: DocumentIncarnation starts over at 1 (applied after `events`). */
    reset: z.literal(true).optional(),
    /** A fault on GET /metadata/scheduledevents starting now. */
    fault: faultSchema.optional(),
    /** Free text for readers. */
    note: z.string().optional(),
  })
  .refine((step) => step.events !== undefined || step.reset !== undefined || step.fault !== undefined, {
    message: "a step needs `events`, `reset` or `fault`",
  });
export type ScenarioStep = z.output<typeof scenarioStepSchema>;

export const vmSchema = z.strictObject({
  name: z.string().min(1).default("WestNO_0"),
  vmId: z.string().optional(),
  resourceId: z.string().optional(),
  subscriptionId: z.string().default("8c1b5f3e-2d4a-4c6b-9e7f-1a2b3c4d5e6f"),
  resourceGroupName: z.string().default("sef-sim-rg"),
  location: z.string().default("norwayeast"),
  vmScaleSetName: z.string().default(""),
  zone: z.string().default(""),
  osType: z.string().default("Linux"),
  vmSize: z.string().default("Standard_D2s_v5"),
  /** Resource tags instance metadata serves (`tags` and `tagsList`). */
  tags: z.record(z.string(), z.string()).default({}),
});
export type ScenarioVm = z.output<typeof vmSchema>;

/** One transition record the agent must emit (only the fields a scenario can predict). */
export const expectedRecordSchema = z.strictObject({
  EventId: z.string().min(1),
  EventStatus: z.enum(["Scheduled", "Started", "Completed", "Canceled"]),
  PreviousStatus: z.enum(["", "Scheduled", "Started"]).optional(),
  AffectsThisVm: z.boolean().default(true),
  ObservationGap: z.boolean().default(false),
});
export type ExpectedRecord = z.output<typeof expectedRecordSchema>;

export const scenarioSchema = z
  .strictObject({
    $schema: z.string().optional(),
    name: z.string().regex(/^[a-z0-9][a-z0-9-]*$/, "lower-case letters, digits and dashes"),
    description: z.string().min(1),
    /** The default VM (the one the `expect` list is written for). */
    vm: vmSchema.default(vmSchema.parse({})),
    /** Scenario seconds per wall-clock second (default 1); `--speed` overrides. */
    speed: z.number().positive().default(1),
    /** Scenario length in scenario seconds; afterwards the final document is served unchanged. */
    durationSeconds: z.number().min(0),
    /** Default time an event stays Started before removal, in scenario seconds (default 600). */
    startedForSeconds: z.number().positive().default(600),
    steps: z.array(scenarioStepSchema),
    /** The exact transition records an agent polling continuously as `vm.name` must emit (no approvals). */
    expect: z.array(expectedRecordSchema).default([]),
  })
  .superRefine((scenario, ctx) => {
    const seen = new Set<string>();
    let previousAt = 0;
    scenario.steps.forEach((step, stepIndex) => {
      if (step.at < previousAt) {
        ctx.addIssue({
          code: "custom",
          path: ["steps", stepIndex, "at"],
          message: `steps must be in time order (${step.at} < ${previousAt})`,
        });
      }
      previousAt = step.at;
      if (step.at > scenario.durationSeconds) {
        ctx.addIssue({
          code: "custom",
          path: ["steps", stepIndex, "at"],
          message: `after durationSeconds (${scenario.durationSeconds})`,
        });
      }
      step.events?.forEach((event, eventIndex) => {
        if (!seen.has(event.EventId)) {
          for (const field of ["EventType", "Resources"] as const) {
            if (event[field] === undefined) {
              ctx.addIssue({
                code: "custom",
                path: ["steps", stepIndex, "events", eventIndex, field],
                message: `required on the first appearance of event ${event.EventId}`,
              });
            }
          }
        }
        seen.add(event.EventId);
      });
    });
    scenario.expect.forEach((record, index) => {
      if (!seen.has(record.EventId)) {
        ctx.addIssue({
          code: "custom",
          path: ["expect", index, "EventId"],
          message: `no step lists event ${record.EventId}`,
        });
      }
    });
  });
export type Scenario = z.output<typeof scenarioSchema>;
export type ScenarioInput = z.input<typeof scenarioSchema>;

export class ScenarioError extends Error {
  override readonly name = "ScenarioError";
}

function formatPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const key of path) out += typeof key === "number" ? `[${key}]` : out === "" ? String(key) : `.${String(key)}`;
  return out === "" ? "(root)" : out;
}

/** Validates a parsed scenario; throws ScenarioError listing every bad field as `path: message`. */
export function parseScenario(value: unknown, source: string): Scenario {
  const result = scenarioSchema.safeParse(value);
  if (result.success) return result.data;
  const lines = result.error.issues.map((issue) => `  ${formatPath(issue.path)}: ${issue.message}`);
  throw new ScenarioError(`invalid scenario ${source}:\n${lines.join("\n")}`);
}
