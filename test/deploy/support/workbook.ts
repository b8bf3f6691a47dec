// The fleet workbook (bicep/workbook/fleet.workbook.json), rendered from the .kql files beside it: each step's query is
// a file, so the KQL test compiles it like the query pack. `generate.ts` writes it; workbook.test.ts checks it is current.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { regenerateCommand } from "./schema-file.js";

export const workbookDir = fileURLToPath(new URL("../../../bicep/workbook/", import.meta.url));
export const workbookPath = join(workbookDir, "fleet.workbook.json");
/** Replaced by the workspace's resource id at deployment (bicep/modules/workbook.bicep). */
export const workspaceToken = "__SEF_WORKSPACE_RESOURCE_ID__";
export const workbookSchemaUrl =
  "https://github.com/Microsoft/Application-Insights-Workbooks/blob/master/schema/workbook.json";
const workspaceResourceType = "microsoft.operationalinsights/workspaces";

export type Visualization = "table" | "timechart" | "barchart" | "piechart" | "tiles";

export interface QueryStep {
  readonly name: string;
  readonly title: string;
  /** A .kql file, relative to bicep/. */
  readonly file: string;
  readonly visualization: Visualization;
  /** Fixed time range in ms (the query bounds itself), or undefined to follow the workbook's TimeRange parameter. */
  readonly fixedRangeMs?: number;
  readonly width?: string;
}

const day = 86_400_000;

export const workbookSteps: readonly QueryStep[] = [
  {
    name: "upcoming-events",
    title: "Upcoming and running events: minutes left before NotBefore",
    file: "workbook/upcoming-events.kql",
    visualization: "table",
    fixedRangeMs: 7 * day,
  },
  { name: "events-by-type", title: "Events by type", file: "workbook/events-by-type.kql", visualization: "timechart" },
  {
    name: "events-by-zone",
    title: "Events by region and zone",
    file: "workbook/events-by-zone.kql",
    visualization: "table",
    width: "50",
  },
  {
    name: "events-by-scale-set",
    title: "Events by scale set",
    file: "workbook/events-by-scale-set.kql",
    visualization: "table",
    width: "50",
  },
  {
    name: "vm-timeline",
    title: "Per-VM timeline (filter by VmName)",
    file: "workbook/vm-timeline.kql",
    visualization: "table",
  },
  {
    name: "silent-agents",
    title: "Silent agents (no record for 45 minutes, no goodbye)",
    file: "queries/silent-agents.kql",
    visualization: "table",
    fixedRangeMs: 2 * day,
  },
  {
    name: "agent-health",
    title: "Agent health: outbox backlog, dead-lettered records, failed polls (latest heartbeat)",
    file: "workbook/agent-health.kql",
    visualization: "table",
    fixedRangeMs: 2 * day,
  },
  {
    name: "agent-versions",
    title: "Agent versions",
    file: "workbook/agent-versions.kql",
    visualization: "piechart",
    fixedRangeMs: 2 * day,
    width: "50",
  },
];

export function stepQueryPath(step: QueryStep): string {
  return join(workbookDir, "..", step.file);
}

const timeRangeParameter = {
  id: "6f0c2f1e-3b8a-4c39-9d0e-5a7b2c1d4e60",
  version: "KqlParameterItem/1.0",
  name: "TimeRange",
  label: "Time range",
  type: 4,
  isRequired: true,
  value: { durationMs: 7 * day },
  typeSettings: {
    selectableValues: [
      { durationMs: 3_600_000 },
      { durationMs: day },
      { durationMs: 7 * day },
      { durationMs: 30 * day },
    ],
  },
};

/** The workbook as an object (Notebook/1.0). */
export function workbookContent(): Record<string, unknown> {
  const items: unknown[] = [
    {
      type: 1,
      name: "title",
      content: {
        json: [
          "## sef: Scheduled Events across the fleet",
          "Records of `ScheduledEvents_CL` written by the sef agents. Times are `ObservedAt`: when the VM saw the event, even for records delivered late.",
        ].join("\n"),
      },
    },
    {
      type: 9,
      name: "parameters",
      content: {
        version: "KqlParameterItem/1.0",
        parameters: [timeRangeParameter],
        style: "pills",
        queryType: 0,
        resourceType: workspaceResourceType,
      },
    },
    ...workbookSteps.map((step) => ({
      type: 3,
      name: step.name,
      content: {
        version: "KqlItem/1.0",
        query: readFileSync(stepQueryPath(step), "utf8"),
        size: 0,
        title: step.title,
        ...(step.fixedRangeMs !== undefined
          ? { timeContext: { durationMs: step.fixedRangeMs } }
          : { timeContextFromParameter: "TimeRange" }),
        queryType: 0,
        resourceType: workspaceResourceType,
        visualization: step.visualization,
        ...(step.visualization === "table" ? { gridSettings: { filter: true } } : {}),
      },
      ...(step.width !== undefined ? { customWidth: step.width } : {}),
    })),
  ];
  return {
    version: "Notebook/1.0",
    items,
    fallbackResourceIds: [workspaceToken],
    $schema: workbookSchemaUrl,
  };
}

/**
 * The exact text of bicep/workbook/fleet.workbook.json (2-space JSON, trailing newline). No `$comment`: the file is the
 * workbook's serializedData as deployed; it is regenerated with `regenerateCommand`.
 */
export function renderWorkbook(): string {
  return `${JSON.stringify(workbookContent(), null, 2)}\n`;
}

export { regenerateCommand };
