// The mutation gate's judgement of Stryker's reports (report.ts): source slices from 1-based positions, equivalents
// matched by file, mutator, snippets and (when given) a piece of the line — not by line number — and scores per module.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  checkEquivalents,
  moduleScores,
  readReport,
  sliceSource,
  type EquivalentMutant,
  type ReportedMutant,
} from "./report.js";

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

describe("mutation report", () => {
  it("slices the source between 1-based positions, across lines", () => {
    expect(sliceSource(source, at(1, 11), at(1, 13))).toBe("[]");
    expect(sliceSource(source, at(2, 5), at(2, 12))).toBe("x === 1");
    expect(sliceSource(source, at(2, 14), at(4, 2))).toBe("{\n  y = [];\n}");
  });

  it("reads each mutant with its snippet and line, and names a module the report lacks", () => {
    const path = report([
      {
        mutatorName: "ArrayDeclaration",
        replacement: '["Stryker was here"]',
        status: "Survived",
        start: [3, 7],
        end: [3, 9],
      },
    ]);
    expect(readReport(path, ["src/m.ts"])).toEqual([
      {
        file: "src/m.ts",
        line: 3,
        column: 7,
        mutator: "ArrayDeclaration",
        original: "[]",
        replacement: '["Stryker was here"]',
        lineText: "  y = [];",
        status: "Survived",
      },
    ]);
    expect(() => readReport(path, ["src/m.ts", "src/moved.ts"])).toThrow(/no mutants reported for src\/moved\.ts/);
  });

  it("matches equivalents by snippet and context, never by line; lists the unlisted survivors and the stale entries", () => {
    const mutant = (line: number, original: string, status: string, lineText: string): ReportedMutant => ({
      file: "src/m.ts",
      line,
      column: 1,
      mutator: "ArrayDeclaration",
      original,
      replacement: '["Stryker was here"]',
      lineText,
      status,
    });
    const first = mutant(1, "[]", "Survived", "const a = [];");
    const second = mutant(30, "[]", "NoCoverage", "  y = [];");
    const killed = mutant(40, "[ ]", "Killed", "z = [ ];");
    const entry = (context?: string): EquivalentMutant => ({
      file: "src/m.ts",
      mutator: "ArrayDeclaration",
      original: "[ ]",
      replacement: '[ "Stryker was here" ]',
      ...(context ? { context } : {}),
      reason: "r",
    });
    const withContext = checkEquivalents([first, second, killed], [entry("const a")]);
    expect([...withContext.listed]).toEqual([first]);
    expect(withContext.unlisted).toEqual([second]);
    expect(withContext.stale).toEqual([]);
    expect([...checkEquivalents([first, second, killed], [entry()]).listed]).toEqual([first, second]);
    expect(checkEquivalents([killed], [entry()]).stale).toEqual([entry()]);
  });

  it("scores a module as killed and timed out over the valid mutants; equivalents still count against it", () => {
    const m = (status: string): ReportedMutant => ({
      file: "src/m.ts",
      line: 1,
      column: 1,
      mutator: "X",
      original: "a",
      replacement: "b",
      lineText: "",
      status,
    });
    const mutants = [
      "Killed",
      "Killed",
      "Timeout",
      "Survived",
      "NoCoverage",
      "CompileError",
      "RuntimeError",
      "Ignored",
    ].map(m);
    const [score] = moduleScores(mutants, ["src/m.ts"], new Set([mutants[3]!]));
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
