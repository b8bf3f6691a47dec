// Markdown helpers shared by the docs generator and the docs tests: word wrapping at the docs' width, GitHub's heading
// anchors, and the list of the repository's Markdown files. Pure functions except `markdownFiles` (runs git).
import { execFileSync } from "node:child_process";

/** Widest line the docs allow (outside fenced code blocks). */
export const docsLineWidth = 120;

/** A word that would turn a wrapped line into a list item, a heading, a quote or a table row. */
const blockStarter = /^(?:[-+*>|#]|\d+[.)])$/;

/** The words of `text`, a code span kept as one word when it is shorter than `room` (so lines break outside it). */
function wrapTokens(text: string, room: number): string[] {
  const words = text.split(/\s+/).filter((w) => w !== "");
  const ticks = (word: string): number => word.split("`").length - 1;
  const tokens: string[] = [];
  for (let i = 0; i < words.length; i++) {
    if (ticks(words[i]!) % 2 === 1) {
      let end = i + 1;
      while (end < words.length && ticks(words[end]!) % 2 === 0) end++;
      const span = words.slice(i, end + 1).join(" ");
      if (end < words.length && span.length <= room) {
        tokens.push(span);
        i = end;
        continue;
      }
    }
    tokens.push(words[i]!);
  }
  return tokens;
}

/** Wraps `text` (one paragraph) at `width`: the first line starts with `first`, the others with `indent`. */
export function wrapParagraph(text: string, first = "", indent = "", width = docsLineWidth): string[] {
  const words = wrapTokens(text, width - indent.length - 20);
  const lines: string[] = [];
  let line = first;
  let empty = true;
  for (const word of words) {
    const candidate = empty ? line + word : `${line} ${word}`;
    if (!empty && candidate.length > width && !blockStarter.test(word)) {
      lines.push(line);
      line = indent + word;
    } else {
      line = candidate;
    }
    empty = false;
  }
  lines.push(line);
  return lines;
}

/** GitHub's anchor for a heading text: lower case, punctuation dropped, spaces to hyphens. */
export function githubSlug(heading: string): string {
  const text = heading
    .replace(/`/g, "")
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1") // links keep their text
    .replace(/<[^>]+>/g, "")
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "").replace(/ /g, "-");
}

/** The anchors a Markdown file defines: its headings (repeats get -1, -2, ... as on GitHub) and explicit ids. */
export function markdownAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of proseLines(markdown)) {
    const heading = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line.text);
    if (heading) {
      const slug = githubSlug(heading[1]!);
      const count = seen.get(slug) ?? 0;
      seen.set(slug, count + 1);
      anchors.add(count === 0 ? slug : `${slug}-${count}`);
    }
    for (const id of line.text.matchAll(/<a\s+(?:name|id)="([^"]+)"/g)) anchors.add(id[1]!);
  }
  return anchors;
}

/** The lines of a Markdown text outside fenced code blocks, with their line numbers (1-based). */
export function proseLines(markdown: string): { text: string; line: number }[] {
  const out: { text: string; line: number }[] = [];
  let fence: string | undefined;
  markdown.split("\n").forEach((text, index) => {
    const marker = /^ {0,3}(`{3,}|~{3,})/.exec(text)?.[1];
    if (fence !== undefined) {
      if (marker !== undefined && marker[0] === fence[0] && marker.length >= fence.length) fence = undefined;
      return;
    }
    if (marker !== undefined) {
      fence = marker;
      return;
    }
    out.push({ text, line: index + 1 });
  });
  return out;
}

/** The repository's Markdown files (tracked, or new and not ignored), relative to `root`, node_modules left out. */
export function markdownFiles(root: string): string[] {
  const listed = execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard", "--", "*.md"], {
    cwd: root,
    encoding: "utf8",
  });
  return [...new Set(listed.split("\n").filter((f) => f !== "" && !f.includes("node_modules/")))].sort();
}
