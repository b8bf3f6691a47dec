// Adding a sink is one folder plus its line in the registry. A copy of the repository's src/ gets the memo sink's folder
// (fixtures/src/sinks/memo: settings with a rule of its own, encode, classify, sink, factory) and its registry line,
// and nothing else; in that copy a configuration naming the sink loads (its section checked by its own schema and
// rule) and the sink the registry builds delivers a record.
import { describe, expect, it } from "vitest";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, relative } from "node:path";
import { spawnSync } from "node:child_process";

const repo = join(import.meta.dirname, "../..");

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
function changedFiles(before: string, after: string): string[] {
  const a = new Set(filesBelow(before));
  const b = new Set(filesBelow(after));
  return [...new Set([...a, ...b])].filter((f) => !a.has(f) || !b.has(f) || !readFileSync(join(before, f)).equals(readFileSync(join(after, f)))).sort();
}

describe("adding a sink", () => {
  it("takes one folder and one registry line: the configuration accepts and checks its section, the registry builds it", () => {
    const copy = mkdtempSync(join(tmpdir(), "sef-add-sink-"));
    try {
      cpSync(join(repo, "src"), join(copy, "src"), { recursive: true, filter: (from) => !notSource(basename(from)) });
      cpSync(join(repo, "package.json"), join(copy, "package.json"));
      symlinkSync(join(repo, "node_modules"), join(copy, "node_modules"), "dir");
      mkdirSync(join(copy, "test/sinks/fixtures"), { recursive: true });
      cpSync(join(repo, "test/sinks/fixtures/memo-probe.ts"), join(copy, "test/sinks/fixtures/memo-probe.ts"));

      // The change: the folder, and the sink's line in the registry (its import, its entry).
      cpSync(join(repo, "test/sinks/fixtures/src/sinks/memo"), join(copy, "src/agent/sinks/memo"), { recursive: true });
      const registryPath = join(copy, "src/agent/sinks/registry.ts");
      const registry = readFileSync(registryPath, "utf8");
      const withMemo = registry
        .replace(/^(import .*\n)(?!import )/m, `$1import { memoSinkFactory } from "./memo/factory.js";\n`)
        .replace("eventHubsSinkFactory];", "eventHubsSinkFactory, memoSinkFactory];");
      expect(withMemo.split("\n").length).toBe(registry.split("\n").length + 1);
      writeFileSync(registryPath, withMemo);
      expect(changedFiles(join(repo, "src"), join(copy, "src"))).toEqual([
        "agent/sinks/memo/classify.ts",
        "agent/sinks/memo/encode.ts",
        "agent/sinks/memo/factory.ts",
        "agent/sinks/memo/settings.ts",
        "agent/sinks/memo/sink.ts",
        "agent/sinks/registry.ts",
      ]);

      const out = join(copy, "memo.txt");
      const config = (memo: unknown): string => {
        const path = join(copy, `config-${Math.random().toString(36).slice(2)}.json`);
        writeFileSync(path, JSON.stringify({ sinks: ["memo"], memo }));
        return path;
      };
      const probe = spawnSync(process.execPath, ["--conditions=source", "--import", "tsx", "test/sinks/fixtures/memo-probe.ts", config({ file: out, label: "seen" }), config({ file: "x", label: "x" }), config({ file: out, colour: "red" })], {
        cwd: copy,
        encoding: "utf8",
        timeout: 60_000,
      });
      expect(probe.stderr).toBe("");
      const result = JSON.parse(probe.stdout) as { outcomes: unknown[]; sameLabel: string[]; unknownKey: string[] };
      expect(result.outcomes).toEqual([{ kind: "delivered" }]);
      expect(readFileSync(out, "utf8")).toBe('seen {"RecordId":"r1"}\n');
      expect(result.sameLabel).toEqual(["memo.label: must differ from memo.file"]);
      expect(result.unknownKey).toEqual(["memo.colour: unknown setting"]);
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  }, 90_000);
});
