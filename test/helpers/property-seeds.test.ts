// The rule of seed.ts, kept: every fast-check property of the suite runs from the shared seed (propertyParams), so a
// run is the same run every time and SEF_TEST_SEED explores others. Read from the TypeScript syntax tree of each test.
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const testRoot = join(import.meta.dirname, "..");

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === "node_modules" ? [] : testFiles(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

/** `fc.assert(…)` calls of a file, each with whether one of its arguments is a `propertyParams(…)` call. */
function assertions(path: string): Array<{ line: number; seeded: boolean }> {
  const source = ts.createSourceFile(path, readFileSync(path, "utf8"), ts.ScriptTarget.Latest, true);
  const found: Array<{ line: number; seeded: boolean }> = [];
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node) && node.expression.getText(source) === "fc.assert") {
      const seeded = node.arguments.some(
        (a) => ts.isCallExpression(a) && a.expression.getText(source) === "propertyParams",
      );
      found.push({ line: source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1, seeded });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe("fast-check properties", () => {
  it("every fc.assert takes the shared seed (propertyParams from test/helpers/seed.ts)", () => {
    const all = testFiles(testRoot).flatMap((path) =>
      assertions(path).map((a) => ({ ...a, file: relative(testRoot, path) })),
    );
    expect(all.length).toBeGreaterThanOrEqual(18);
    expect(all.filter((a) => !a.seeded).map((a) => `${a.file}:${a.line}`)).toEqual([]);
  });
});
