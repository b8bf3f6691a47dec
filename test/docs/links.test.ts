// Every relative link in the repository's Markdown files points at a file or folder that exists, and every #anchor at
// a heading (GitHub's slug rules) or an explicit id of the file it names.
import { describe, expect, it } from "vitest";
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { markdownAnchors, markdownFiles, proseLines } from "../../infra/docs/markdown.js";
import { repoRoot } from "../../infra/docs/config-reference.js";

interface Link {
  readonly target: string;
  readonly line: number;
}

/** The inline links of a Markdown text outside code blocks and code spans, with their line numbers. */
export function markdownLinks(markdown: string): Link[] {
  const lines = markdown.split("\n").map(() => "");
  for (const { text, line } of proseLines(markdown)) lines[line - 1] = text;
  const prose = lines.join("\n").replace(/(`+)[\s\S]*?\1/g, (span) => span.replace(/[^\n]/g, " "));
  const links: Link[] = [];
  for (const match of prose.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)/g)) {
    links.push({ target: match[1]!, line: prose.slice(0, match.index).split("\n").length });
  }
  return links;
}

/** Why `target`, linked from `file` (repository-relative), does not resolve; undefined when it does. */
export function brokenLink(root: string, file: string, target: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return undefined; // https:, mailto: ...: not checked here
  const [rawPath, anchor] = target.split("#", 2) as [string, string | undefined];
  const path = decodeURIComponent(rawPath);
  const resolved = path === "" ? join(root, file) : normalize(join(root, dirname(file), path));
  if (!resolved.startsWith(root)) return "points outside the repository";
  if (!existsSync(resolved)) return "no such file";
  if (anchor === undefined || anchor === "") return undefined;
  if (statSync(resolved).isDirectory() || !resolved.endsWith(".md"))
    return "an anchor into something that is not Markdown";
  return markdownAnchors(readFileSync(resolved, "utf8")).has(decodeURIComponent(anchor))
    ? undefined
    : `no heading #${anchor}`;
}

describe("links in the docs", () => {
  const files = markdownFiles(repoRoot).filter((file) => existsSync(join(repoRoot, file)));

  it("finds the docs", () => {
    expect(files).toContain("README.md");
    expect(files.length).toBeGreaterThan(10);
  });

  it("resolves every relative link and anchor in every Markdown file", () => {
    const broken: string[] = [];
    for (const file of files) {
      for (const link of markdownLinks(readFileSync(join(repoRoot, file), "utf8"))) {
        const why = brokenLink(repoRoot, file, link.target);
        if (why !== undefined) broken.push(`${file}:${link.line}: ${link.target}: ${why}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it("finds links across line breaks and skips code", () => {
    const text = 'see [the\nstore](a.md#x) and `[not](b.md)`\n\n```\n[nor](c.md)\n```\n[yes](d.md "title")';
    expect(markdownLinks(text)).toEqual([
      { target: "a.md#x", line: 1 },
      { target: "d.md", line: 7 },
    ]);
  });

  it("names anchors as GitHub does", () => {
    const anchors = markdownAnchors(
      "# Fleet notifications: `sef fleet`\n## Finding IMDS (endpoint discovery)\n## Notes\n## Notes\n",
    );
    expect([...anchors]).toEqual([
      "fleet-notifications-sef-fleet",
      "finding-imds-endpoint-discovery",
      "notes",
      "notes-1",
    ]);
  });
});
