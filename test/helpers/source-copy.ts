// A copy of the repository's src/ to change as a contributor would (add a sink or an action), the files that differ
// between two trees, and the copy's `sef` run from source: what test/sinks/add-sink.test.ts and
// test/actions/add-action.test.ts prove "one folder and one line" with.
import { cpSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { basename, join, relative } from "node:path";

export const repo = join(import.meta.dirname, "../..");

/** Build output and installed packages: not source. */
const notSource = (name: string): boolean => name === "dist" || name === "node_modules";

/** Paths (relative to `root`) of every source file below it. */
function filesBelow(root: string, dir = root): string[] {
  return readdirSync(dir).flatMap((name) => {
    if (notSource(name)) return [];
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesBelow(root, path) : [relative(root, path)];
  });
}

/** Files that differ between two trees, or exist in one only. */
export function changedFiles(before: string, after: string): string[] {
  const a = new Set(filesBelow(before));
  const b = new Set(filesBelow(after));
  return [...new Set([...a, ...b])]
    .filter((f) => !a.has(f) || !b.has(f) || !readFileSync(join(before, f)).equals(readFileSync(join(after, f))))
    .sort();
}

/** The lines `after` adds to `before` when it only adds lines (undefined when it removes or changes one). */
export function addedLines(before: string, after: string): string[] | undefined {
  const old = before.split("\n");
  const added: string[] = [];
  let i = 0;
  for (const line of after.split("\n")) {
    if (i < old.length && line === old[i]) i++;
    else added.push(line);
  }
  return i === old.length ? added : undefined;
}

/**
 * Copies src/ (and what running it from source needs) into `copy`, adds the fixture folder `fixture` (a path in the
 * repository) as `folder` (a path in the copy), and appends `line` to `registry` (a path in the copy).
 */
export function copyWithFolderAndLine(
  copy: string,
  fixture: string,
  folder: string,
  registry: string,
  line: string,
): void {
  cpSync(join(repo, "src"), join(copy, "src"), { recursive: true, filter: (from) => !notSource(basename(from)) });
  cpSync(join(repo, "package.json"), join(copy, "package.json"));
  symlinkSync(join(repo, "node_modules"), join(copy, "node_modules"), "dir");
  cpSync(join(repo, fixture), join(copy, folder), { recursive: true });
  const file = join(copy, registry);
  writeFileSync(file, `${readFileSync(file, "utf8")}${line}\n`);
}

/** Arguments that run the copy's `sef` from source (as `npm run dev` would), from the copy's directory. */
export const sefFromSource = (args: string[]): string[] => [
  "--conditions=source",
  "--import",
  "tsx",
  "src/agent/cli/main.ts",
  ...args,
];
