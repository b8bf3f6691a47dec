// The fleet workbook: bicep/workbook/fleet.workbook.json is current with its .kql files, has the structure of the
// workbook schema (Notebook/1.0: no registry package ships that schema, so it is checked by structure here), every
// query compiles against ScheduledEvents_CL, and workbook.bicep deploys it over the workspace.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { kustoTableSchema } from "../../src/contract/kusto-schema.js";
import { tableName } from "../../src/contract/stream-schema.js";
import {
  bicepRoot,
  callsOf,
  filesUnder,
  loadBicepParser,
  loadedPath,
  parseBicep,
  propertiesNamed,
  resourceDeclarations,
  stringLiteral,
} from "./support/bicep.js";
import { loadKqlChecker, type KqlChecker } from "./support/kusto.js";
import {
  regenerateCommand,
  renderWorkbook,
  stepQueryPath,
  workbookDir,
  workbookPath,
  workbookSchemaUrl,
  workbookSteps,
  workspaceToken,
} from "./support/workbook.js";

const workspaceType = z.literal("microsoft.operationalinsights/workspaces");
const common = { name: z.string().min(1), customWidth: z.string().regex(/^\d+$/).optional() };
const markdownItem = z
  .object({ type: z.literal(1), content: z.object({ json: z.string().min(1) }).strict(), ...common })
  .strict();
const parametersItem = z
  .object({
    type: z.literal(9),
    content: z
      .object({
        version: z.literal("KqlParameterItem/1.0"),
        parameters: z
          .array(
            z
              .object({
                id: z.string().uuid(),
                version: z.literal("KqlParameterItem/1.0"),
                name: z.string().regex(/^\w+$/),
                type: z.number().int(),
              })
              .passthrough(),
          )
          .min(1),
        style: z.enum(["pills", "above", "formHorizontal", "formVertical"]),
        queryType: z.literal(0),
        resourceType: workspaceType,
      })
      .strict(),
    ...common,
  })
  .strict();
const queryItem = z
  .object({
    type: z.literal(3),
    content: z
      .object({
        version: z.literal("KqlItem/1.0"),
        query: z.string().min(1),
        size: z.number().int().min(0).max(4),
        title: z.string().min(1),
        timeContext: z.object({ durationMs: z.number().int().positive() }).strict().optional(),
        timeContextFromParameter: z.string().optional(),
        queryType: z.literal(0),
        resourceType: workspaceType,
        visualization: z.enum([
          "table",
          "timechart",
          "barchart",
          "piechart",
          "tiles",
          "areachart",
          "linechart",
          "scatterchart",
          "categoricalbar",
          "graph",
          "map",
        ]),
        gridSettings: z.object({ filter: z.boolean() }).passthrough().optional(),
      })
      .strict()
      .refine(
        (c) => (c.timeContext === undefined) !== (c.timeContextFromParameter === undefined),
        "a query needs exactly one of timeContext and timeContextFromParameter",
      ),
    ...common,
  })
  .strict();
const workbookSchema = z
  .object({
    version: z.literal("Notebook/1.0"),
    items: z.array(z.union([markdownItem, parametersItem, queryItem])).min(1),
    fallbackResourceIds: z.array(z.string()).optional(),
    $schema: z.literal(workbookSchemaUrl),
  })
  .strict()
  .superRefine((wb, ctx) => {
    const names = wb.items.map((i) => i.name);
    if (new Set(names).size !== names.length)
      ctx.addIssue({ code: "custom", message: `item names must be unique: ${names.join(", ")}` });
    const parameters = new Set(wb.items.flatMap((i) => (i.type === 9 ? i.content.parameters.map((p) => p.name) : [])));
    for (const item of wb.items) {
      if (
        item.type === 3 &&
        item.content.timeContextFromParameter !== undefined &&
        !parameters.has(item.content.timeContextFromParameter)
      ) {
        ctx.addIssue({
          code: "custom",
          message: `${item.name}: unknown parameter ${item.content.timeContextFromParameter}`,
        });
      }
    }
  });

type Workbook = z.infer<typeof workbookSchema>;
const problemsOf = (value: unknown): string[] => {
  const result = workbookSchema.safeParse(value);
  return result.success ? [] : result.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
};

let checker: KqlChecker;
let workbook: Workbook;

beforeAll(() => {
  checker = loadKqlChecker();
  workbook = workbookSchema.parse(JSON.parse(readFileSync(workbookPath, "utf8")));
});

describe("fleet workbook", () => {
  it(`is up to date with its .kql files (regenerate with: ${regenerateCommand})`, () => {
    expect(readFileSync(workbookPath, "utf8")).toBe(renderWorkbook());
  });

  it("has the workbook structure, and the structure check rejects broken workbooks", () => {
    expect(problemsOf(JSON.parse(readFileSync(workbookPath, "utf8")))).toEqual([]);
    const broken = JSON.parse(readFileSync(workbookPath, "utf8")) as { items: Array<Record<string, unknown>> };
    expect(problemsOf({ ...broken, version: "Notebook/2.0" })).not.toEqual([]);
    expect(problemsOf({ ...broken, items: [...broken.items, { type: 7, name: "x", content: {} }] })).not.toEqual([]);
    expect(problemsOf({ ...broken, items: [...broken.items, broken.items[2]] })).not.toEqual([]);
    const withoutQuery = broken.items.map((i) =>
      i.type === 3 ? { ...i, content: { ...(i.content as object), query: undefined } } : i,
    );
    expect(problemsOf({ ...broken, items: withoutQuery })).not.toEqual([]);
  });

  it("shows upcoming events, a per-VM timeline, events by type/zone/scale set, silent agents, agent versions and health", () => {
    expect(workbook.items.filter((i) => i.type === 3).map((i) => i.name)).toEqual([
      "upcoming-events",
      "events-by-type",
      "events-by-zone",
      "events-by-scale-set",
      "vm-timeline",
      "silent-agents",
      "agent-health",
      "agent-versions",
    ]);
    const query = (name: string): string => {
      const item = workbook.items.find((i) => i.name === name);
      return item?.type === 3 ? item.content.query : "";
    };
    expect(query("upcoming-events")).toMatch(/MinutesLeft = round\(\(NotBefore - now\(\)\) \/ 1m, 1\)/);
    expect(query("silent-agents")).toBe(readFileSync(join(bicepRoot, "queries/silent-agents.kql"), "utf8"));
    for (const field of ["undelivered", "deadLettered", "failedPolls"])
      expect(query("agent-health")).toContain(`Stats.${field}`);
    expect(workbook.fallbackResourceIds).toEqual([workspaceToken]);
  });

  it("every query compiles against the contract's table, and every .kql under bicep/workbook is a step", () => {
    const failures = workbookSteps.flatMap((step) =>
      checker
        .errors(readFileSync(stepQueryPath(step), "utf8"), { [tableName]: kustoTableSchema() })
        .map((e) => `${step.file} @${e.start}: ${e.message}`),
    );
    expect(failures).toEqual([]);
    expect(filesUnder(workbookDir, ".kql").sort()).toEqual(
      workbookSteps
        .filter((s) => s.file.startsWith("workbook/"))
        .map(stepQueryPath)
        .sort(),
    );
  });

  it("workbook.bicep deploys the generated file as a shared workbook of the workspace, and main.bicep deploys it", async () => {
    const parser = await loadBicepParser();
    const file = parseBicep(parser, join(bicepRoot, "modules/workbook.bicep"));
    expect(resourceDeclarations(file).map((r) => r.typeAndVersion)).toEqual([
      "Microsoft.Insights/workbooks@2023-06-01",
    ]);
    expect(callsOf(file, "loadTextContent").map((c) => loadedPath(file, c))).toEqual([workbookPath]);
    const serialized = propertiesNamed(file, "serializedData")[0]?.value.text ?? "";
    expect(serialized).toBe(
      `replace(loadTextContent('../workbook/fleet.workbook.json'), '${workspaceToken}', workspaceResourceId)`,
    );
    expect(propertiesNamed(file, "sourceId").map((p) => p.value.text)).toEqual(["workspaceResourceId"]);
    expect(propertiesNamed(file, "kind").map((p) => stringLiteral(p.value))).toEqual(["shared"]);
    expect(readFileSync(workbookPath, "utf8").split(workspaceToken)).toHaveLength(2);
    const main = parseBicep(parser, join(bicepRoot, "main.bicep"));
    expect(main.text).toMatch(/module workbook 'modules\/workbook\.bicep' = if \(deployWorkbook\)/);
  });
});
