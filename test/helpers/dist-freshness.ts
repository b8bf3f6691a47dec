// Whether the built trees the process tests run (each workspace package's dist/) match the sources: every source module
// has its built file and none is newer than the build. The vitest global set-up rebuilds when they do not;
// agent-process.ts refuses to spawn.
import { globSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { workspacePackages } from "../../infra/build.js";

export const repoRoot = resolve(import.meta.dirname, "../..");

/** Each workspace package's sources and the directory they are built into (infra/build.ts). */
export const builtTrees: readonly { readonly srcDir: string; readonly distDir: string }[] = workspacePackages.map(
  (name) => ({
    srcDir: join(repoRoot, "src", name),
    distDir: join(repoRoot, "src", name, "dist"),
  }),
);

const builtInputs = ["**/*.ts", "**/*.json"];

/** Why `distDir` is out of date with `srcDir` (a missing or older built file), or undefined when it is current. */
export function staleReason(srcDir: string, distDir: string): string | undefined {
  const sources = globSync(builtInputs, {
    cwd: srcDir,
    exclude: (path) => path === "dist" || path === "node_modules",
  }).filter((file) => !file.endsWith(".d.ts") && (file.endsWith(".ts") || file.includes("scenarios/")));
  let oldestBuiltMs = Infinity;
  for (const file of globSync("**/*", { cwd: distDir, withFileTypes: true })) {
    if (file.isFile()) oldestBuiltMs = Math.min(oldestBuiltMs, statSync(join(file.parentPath, file.name)).mtimeMs);
  }
  for (const source of sources) {
    const built = join(distDir, source.endsWith(".ts") ? source.replace(/\.ts$/, ".js") : source);
    try {
      statSync(built);
    } catch {
      return `${built} is missing (its source is ${join(srcDir, source)})`;
    }
    const sourceMs = statSync(join(srcDir, source)).mtimeMs;
    if (sourceMs > oldestBuiltMs) return `${join(srcDir, source)} is newer than the build in ${distDir}`;
  }
  return undefined;
}

/** Throws when any built tree is out of date, naming the file and the fix. */
export function assertBuiltTreesCurrent(): void {
  for (const { srcDir, distDir } of builtTrees) {
    const reason = staleReason(srcDir, distDir);
    if (reason !== undefined)
      throw new Error(`the built code is stale: ${reason}; run \`npm run build\` (vitest's global set-up does it)`);
  }
}
