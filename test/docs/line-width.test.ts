// The docs wrap at a readable width: no line of a Markdown file outside fenced code blocks is longer than 120
// characters (table rows included: a row cannot wrap, so long tables are lists).
import { describe, expect, it } from "vitest";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { docsLineWidth, markdownFiles, proseLines } from "../../infra/docs/markdown.js";
import { repoRoot } from "../../infra/docs/config-reference.js";

describe("Markdown line width", () => {
  it(`keeps prose lines within ${docsLineWidth} characters`, () => {
    const long: string[] = [];
    for (const file of markdownFiles(repoRoot).filter((f) => existsSync(join(repoRoot, f)))) {
      for (const { text, line } of proseLines(readFileSync(join(repoRoot, file), "utf8"))) {
        const width = [...text].length;
        if (width > docsLineWidth) long.push(`${file}:${line}: ${width} characters`);
      }
    }
    expect(long).toEqual([]);
  });
});
