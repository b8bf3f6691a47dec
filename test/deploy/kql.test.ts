// Every KQL query the templates deploy (query pack, alert rules, DCR transformation) compiles with the Kusto language
// service against ScheduledEvents_CL as the record contract defines it; a broken query is shown to fail.
import { readFileSync } from "node:fs";
import { relative } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { kustoTableSchema } from "../../src/contract/kusto-schema.js";
import { tableName } from "../../src/contract/stream-schema.js";
import { bicepRoot, filesUnder, loadBicepParser, parseBicep, repoRoot } from "./support/bicep.js";
import { loadKqlChecker, type KqlChecker } from "./support/kusto.js";
import { kqlSources, type KqlSource } from "./support/kql-sources.js";

let checker: KqlChecker;
let sources: KqlSource[];
const tablesFor = (source: KqlSource): Record<string, string> =>
  source.property === "transformKql" ? { source: kustoTableSchema() } : { [tableName]: kustoTableSchema() };
const label = (source: KqlSource): string => `${relative(repoRoot, source.path)} (${source.file} ${source.property})`;

beforeAll(async () => {
  checker = loadKqlChecker();
  const parser = await loadBicepParser();
  sources = kqlSources(filesUnder(bicepRoot, ".bicep").map((path) => parseBicep(parser, path))).queries;
});

describe("KQL compiles against the contract's table", () => {
  it("every query file loaded by a template compiles without errors", () => {
    expect(sources.length).toBeGreaterThanOrEqual(14);
    const failures = sources.flatMap((s) =>
      checker.errors(readFileSync(s.path, "utf8"), tablesFor(s)).map((e) => `${label(s)} @${e.start}: ${e.message}`),
    );
    expect(failures).toEqual([]);
  });

  it("each replace() target occurs exactly once, and the substituted query compiles too", () => {
    const replaced = sources.filter((s) => s.replacement !== undefined);
    expect(replaced.length).toBe(3);
    for (const s of replaced) {
      const text = readFileSync(s.path, "utf8");
      const { old, new: replacement } = s.replacement ?? { old: "", new: "" };
      expect(text.split(old).length - 1, `${label(s)}: '${old}' must occur once`).toBe(1);
      expect(replacement, `${label(s)}: the replacement must be parameterized`).toMatch(/= (7m|"7");$/);
      expect(checker.errors(text.replace(old, replacement), tablesFor(s)), label(s)).toEqual([]);
    }
  });

  it("library and alert queries read ScheduledEvents_CL; the transformation reads source and has no comments", () => {
    for (const s of sources) {
      const text = readFileSync(s.path, "utf8");
      if (s.property === "transformKql") {
        expect(text.trimStart().startsWith("source"), label(s)).toBe(true);
        expect(text, label(s)).not.toMatch(/\/\/|\/\*/);
      } else {
        expect(text, label(s)).toContain(tableName);
      }
    }
  });

  it("the silent-agent query uses Heartbeat records and the contract's heartbeat cadence", () => {
    const text = readFileSync(`${bicepRoot}/queries/silent-agents.kql`, "utf8");
    expect(text).toContain('RecordType == "Heartbeat"');
    expect(text).toContain("let silentAfter = 45m;");
  });

  it("the silent-agent query leaves out VMs whose last record is their goodbye (a Stopping Heartbeat)", () => {
    const text = readFileSync(`${bicepRoot}/queries/silent-agents.kql`, "utf8");
    expect(text).toMatch(/arg_max\(ObservedAt, RecordType, Outcome,/);
    expect(text).toContain('| where not(RecordType == "Heartbeat" and Outcome == "Stopping")');
    expect(text).toMatch(/arg\(""\)\.Resources/);
  });
});

describe("the node-drain query", () => {
  it("is deployed, compiles, and reads the Kubernetes records' drain steps and their Detail numbers", () => {
    const source = sources.find((s) => s.path.endsWith("/queries/node-drains.kql"));
    expect(source, "node-drains.kql is loaded by a template").toBeDefined();
    const text = readFileSync(source!.path, "utf8");
    expect(checker.errors(text, tablesFor(source!))).toEqual([]);
    expect(text).toContain('RecordType == "Kubernetes" and Outcome in ("Drained", "DrainIncomplete")');
    for (const field of ["node", "podsEvicted", "podsBlockedByPdb", "pdbHeldSeconds", "podsLeft"])
      expect(text).toContain(`Step.${field}`);
  });
});

describe("the KQL check can fail", () => {
  const table = (): Record<string, string> => ({ [tableName]: kustoTableSchema() });

  it("reports an unknown column", () => {
    const errors = checker.errors(`${tableName} | where EventStatuz == "Started"`, table());
    expect(errors.map((e) => e.message).join("\n")).toMatch(/EventStatuz/);
  });

  it("reports a syntax error", () => {
    expect(checker.errors(`${tableName} | summarize count() by bin(TimeGenerated, 1h`, table())).not.toEqual([]);
  });

  it("reports a type error (comparing a bool column with a string)", () => {
    expect(checker.errors(`${tableName} | where AffectsThisVm > ago(1h)`, table())).not.toEqual([]);
  });

  it("reports an unknown table (a transformation must read source)", () => {
    expect(checker.errors(`${tableName} | take 1`, { source: kustoTableSchema() })).not.toEqual([]);
    expect(checker.errors("source | take 1", { source: kustoTableSchema() })).toEqual([]);
  });
});
