// Functions that fit on a screen: no function, method or arrow in the workspace packages (agent, fleet, testbed,
// contract) spans more than 80 lines, counted from the TypeScript syntax tree (first to last line of the node).
import { describe, expect, it } from "vitest";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import ts from "typescript";

const repo = join(import.meta.dirname, "../..");
const maxLines = 80;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    if (name === "node_modules" || name === "dist") return [];
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return /\.m?ts$/.test(name) && !name.endsWith(".d.ts") ? [path] : [];
  });
}

/** Every function with a body in `file`: its name (or the variable or property it is assigned to), line and length. */
function functionsOf(file: string): { where: string; lines: number }[] {
  const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
  const found: { where: string; lines: number }[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && "body" in node && node.body) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const last = source.getLineAndCharacterOfPosition(node.end).line;
      const named =
        node.name ??
        (ts.isVariableDeclaration(node.parent) || ts.isPropertyAssignment(node.parent) ? node.parent.name : undefined);
      found.push({
        where: `${relative(repo, file)}:${first + 1} ${named ? named.getText(source) : "(anonymous)"}`,
        lines: last - first + 1,
      });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe("function length", () => {
  it(`no function in src/ is longer than ${maxLines} lines`, () => {
    const functions = sourceFiles(join(repo, "src")).flatMap(functionsOf);
    expect(functions.length).toBeGreaterThan(500);
    expect(functions.filter((f) => f.lines > maxLines).map((f) => `${f.where}: ${f.lines} lines`)).toEqual([]);
  });
});
