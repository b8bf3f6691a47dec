// The mutation gate's judgement (report.ts) and its result keys (results.ts): source slices from 1-based positions;
// an equivalent entry names exactly one place (its context verbatim, once in the file, framing the mutant's lines);
// entries without a context or for a file outside every group are invalid; scores per module; a group's key changes
// when any file its tests load changes, a helper included, and only then.
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  checkEquivalents,
  contextPlaces,
  countByModule,
  framedBy,
  moduleScores,
  mutateRange,
  readReport,
  sliceSource,
  type EquivalentMutant,
  type ReportedMutant,
} from "./report.js";
import { changedInputs, hashInputs, loadedFiles } from "./results.js";

const source = "const a = [];\nif (x === 1) {\n  y = [];\n}\n";
const at = (line: number, column: number) => ({ line, column });

function report(
  mutants: Array<{
    mutatorName: string;
    replacement: string;
    status: string;
    start: [number, number];
    end: [number, number];
  }>,
): string {
  const dir = mkdtempSync(join(tmpdir(), "sef-mutation-report-"));
  const path = join(dir, "report.json");
  const files = {
    "src/m.ts": {
      source,
      mutants: mutants.map((m) => ({ ...m, location: { start: at(...m.start), end: at(...m.end) } })),
    },
  };
  writeFileSync(path, JSON.stringify({ files }));
  return path;
}

/** A module with five identical stop checks, as the drainer had: one entry must excuse one of them. */
const drainer = [
  "async run() {",
  "  while (true) {",
  "    if (this.stopRequested) return;",
  "    await wait(1);",
  "    if (this.stopRequested) return;",
  "    await send();",
  "    if (this.stopRequested) return; // shutting down",
  "    if (this.stopRequested) return;",
  "  }",
  "  if (this.stopRequested) return;",
  "}",
].join("\n");
const stopCheck = (line: number, status = "Survived"): ReportedMutant => ({
  file: "src/d.ts",
  line,
  column: line === 10 ? 7 : 9,
  endLine: line,
  endColumn: line === 10 ? 25 : 27,
  mutator: "ConditionalExpression",
  original: "this.stopRequested",
  replacement: "false",
  status,
});
const stopEntry = (context: string): EquivalentMutant => ({
  file: "src/d.ts",
  mutator: "ConditionalExpression",
  original: "this.stopRequested",
  replacement: "false",
  context,
  reason: "r",
});
const gated = new Set(["src/d.ts"]);
const judge = (mutants: ReportedMutant[], entries: EquivalentMutant[]) =>
  checkEquivalents(mutants, entries, () => drainer, gated);

describe("mutation report", () => {
  it("slices the source between 1-based positions, across lines", () => {
    expect(sliceSource(source, at(1, 11), at(1, 13))).toBe("[]");
    expect(sliceSource(source, at(2, 5), at(2, 12))).toBe("x === 1");
    expect(sliceSource(source, at(2, 14), at(4, 2))).toBe("{\n  y = [];\n}");
  });

  it("reads each mutant with its place and snippet, and names a module the report lacks", () => {
    const path = report([
      {
        mutatorName: "BlockStatement",
        replacement: "{}",
        status: "Survived",
        start: [2, 14],
        end: [4, 2],
      },
    ]);
    expect(readReport(path, ["src/m.ts"])).toEqual([
      {
        file: "src/m.ts",
        line: 2,
        column: 14,
        endLine: 4,
        endColumn: 2,
        mutator: "BlockStatement",
        original: "{\n  y = [];\n}",
        replacement: "{}",
        status: "Survived",
      },
    ]);
    expect(() => readReport(path, ["src/m.ts", "src/moved.ts"])).toThrow(/no mutants reported for src\/moved\.ts/);
  });

  it("gives Stryker's mutate range of exactly one mutant: lines 1-based, columns 0-based", () => {
    expect(mutateRange(stopCheck(5))).toBe("src/d.ts:5:8-5:26");
  });

  it("finds a context only as whole lines, verbatim: indentation counts, a part of a line is no place", () => {
    const frame = "    await wait(1);\n    if (this.stopRequested) return;\n    await send();";
    expect(contextPlaces(drainer, frame)).toEqual([{ first: 4, last: 6 }]);
    expect(contextPlaces(drainer, frame.replace(/^ {4}/gm, "  "))).toEqual([]);
    expect(contextPlaces(drainer, "await wait(1);")).toEqual([]);
    expect(contextPlaces(drainer, "    if (this.stopRequested) return;")).toHaveLength(3);
  });

  it("frames a mutant by as many lines before as after it, one at least, fewer only at the file's edge", () => {
    expect(framedBy({ line: 5, endLine: 5 }, { first: 4, last: 6 }, 11)).toBe(true);
    expect(framedBy({ line: 5, endLine: 5 }, { first: 3, last: 7 }, 11)).toBe(true);
    expect(framedBy({ line: 5, endLine: 5 }, { first: 4, last: 7 }, 11)).toBe(false);
    expect(framedBy({ line: 5, endLine: 5 }, { first: 5, last: 6 }, 11)).toBe(false);
    expect(framedBy({ line: 5, endLine: 5 }, { first: 5, last: 5 }, 11)).toBe(false);
    expect(framedBy({ line: 4, endLine: 6 }, { first: 3, last: 7 }, 11)).toBe(true);
    expect(framedBy({ line: 1, endLine: 1 }, { first: 1, last: 2 }, 11)).toBe(true);
    expect(framedBy({ line: 11, endLine: 11 }, { first: 9, last: 11 }, 11)).toBe(true);
  });

  it("excuses with one entry exactly the one of five identical lines its context frames", () => {
    const survivors = [3, 5, 7, 8, 10].map((line) => stopCheck(line));
    const lines = drainer.split("\n");
    const entry = stopEntry(lines.slice(3, 6).join("\n")); // lines 4-6: the check after the wait
    const check = judge(survivors, [entry]);
    expect([...check.listed]).toEqual([survivors[1]]);
    expect(check.unlisted).toEqual([survivors[0], survivors[2], survivors[3], survivors[4]]);
    expect(check.stale).toEqual([]);
    expect(check.invalid).toEqual([]);
    // The same entry once the check it names is killed: stale, though four identical lines still survive.
    const killedThere = judge([survivors[0]!, stopCheck(5, "Killed"), ...survivors.slice(2)], [entry]);
    expect(killedThere.stale).toEqual([entry]);
    expect(killedThere.listed.size).toBe(0);
  });

  it("compares the snippets and the context verbatim: other whitespace matches nothing", () => {
    const lines = drainer.split("\n");
    const squeezed = stopEntry(lines.slice(3, 6).join("\n").replace(/\s+/g, " "));
    expect(judge([stopCheck(5)], [squeezed]).stale).toEqual([squeezed]);
    const spaced = { ...stopEntry(lines.slice(3, 6).join("\n")), original: "this.stopRequested " };
    expect(judge([stopCheck(5)], [spaced]).stale).toEqual([spaced]);
  });

  it("refuses an entry without a context, one whose context occurs twice, and one for a file in no group", () => {
    const lines = drainer.split("\n");
    const noContext = { ...stopEntry(""), context: undefined } as unknown as EquivalentMutant;
    const twice = stopEntry("    if (this.stopRequested) return;");
    const elsewhere = { ...stopEntry(lines.slice(3, 6).join("\n")), file: "src/other.ts" };
    const check = judge([stopCheck(5)], [noContext, twice, elsewhere]);
    expect(check.invalid.map((i) => [i.entry, i.problem])).toEqual([
      [noContext, expect.stringMatching(/no context/)],
      [twice, expect.stringMatching(/occurs 3 times/)],
      [elsewhere, expect.stringMatching(/in no group/)],
    ]);
    expect(check.unlisted).toEqual([stopCheck(5)]);
    expect(check.listed.size).toBe(0);
  });

  it("refuses an entry whose frame holds two identical survivors: one entry names one mutant", () => {
    const twin = { ...stopCheck(7), column: 35, endColumn: 53 }; // a second identical mutant on the same line
    const entry = stopEntry(drainer.split("\n").slice(5, 8).join("\n"));
    expect(judge([stopCheck(7), twin], [entry]).invalid).toEqual([
      { entry, problem: expect.stringMatching(/names 2 survivors/) },
    ]);
  });

  it("scores a module as killed and timed out over the valid mutants; equivalents still count against it", () => {
    const m = (status: string, line: number): ReportedMutant => ({ ...stopCheck(line), file: "src/m.ts", status });
    const mutants = [
      "Killed",
      "Killed",
      "Timeout",
      "Survived",
      "NoCoverage",
      "CompileError",
      "RuntimeError",
      "Ignored",
    ];
    const all = mutants.map((status, i) => m(status, i + 1));
    const counts = countByModule(all, ["src/m.ts"]);
    expect(counts).toEqual({ "src/m.ts": { killed: 2, timeout: 1, survived: 1, noCoverage: 1 } });
    const [score] = moduleScores(counts, [all[3]!, all[4]!], new Set([all[3]!]));
    expect(score).toEqual({
      module: "src/m.ts",
      valid: 5,
      killed: 2,
      timeout: 1,
      survived: 1,
      noCoverage: 1,
      equivalent: 1,
      scorePercent: 60,
    });
  });
});

describe("a group's result key", () => {
  /** A tree: a module, a test of it that loads a helper, the helper's own import, and a file nothing loads. */
  function tree(): string {
    const root = mkdtempSync(join(tmpdir(), "sef-mutation-key-"));
    const files: Record<string, string> = {
      "src/agent/m.ts": "export const m = 1;\n",
      "test/m.test.ts": 'import { m } from "../src/agent/m.js";\nimport { help } from "./helpers/h.js";\nhelp(m);\n',
      "test/helpers/h.ts": 'import { deep } from "./deep.js";\nexport const help = (n: number) => deep(n);\n',
      "test/helpers/deep.ts": "export const deep = (n: number) => n + 1;\n",
      "test/helpers/unrelated.ts": "export const u = 2;\n",
      "test/mutation/vitest.config.ts": "export default {};\n",
      "tsconfig.json": "{}\n",
      "package-lock.json": JSON.stringify({ packages: { "node_modules/vitest": { version: "4.0.0" } } }),
    };
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(dirname(join(root, path)), { recursive: true });
      writeFileSync(join(root, path), text);
    }
    return root;
  }
  const group = { name: "g", modules: ["src/agent/m.ts"], tests: ["test/m.test.ts"] };

  it("covers the modules, the test files and everything they import, transitively", async () => {
    expect(await loadedFiles(tree(), group)).toEqual([
      "src/agent/m.ts",
      "test/helpers/deep.ts",
      "test/helpers/h.ts",
      "test/m.test.ts",
    ]);
  });

  it("changes when a helper the tests load changes, even one imported through another, and names it", async () => {
    const root = tree();
    const before = await hashInputs(root, group);
    writeFileSync(join(root, "test/helpers/unrelated.ts"), "export const u = 3;\n");
    expect((await hashInputs(root, group)).key).toBe(before.key);
    writeFileSync(join(root, "test/helpers/deep.ts"), "export const deep = (n: number) => n + 2;\n");
    const after = await hashInputs(root, group);
    expect(after.key).not.toBe(before.key);
    expect(changedInputs(before.inputs, after.inputs)).toEqual(["test/helpers/deep.ts"]);
  });

  it("changes with the group's definition and the tools' versions", async () => {
    const root = tree();
    const before = (await hashInputs(root, group)).key;
    expect((await hashInputs(root, { ...group, name: "h" })).key).not.toBe(before);
    writeFileSync(
      join(root, "package-lock.json"),
      JSON.stringify({ packages: { "node_modules/vitest": { version: "4.0.1" } } }),
    );
    expect((await hashInputs(root, group)).key).not.toBe(before);
  });
});
