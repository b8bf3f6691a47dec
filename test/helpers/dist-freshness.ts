// Whether the built tree the process tests run (dist/) matches the sources: every source module has its built file and
// none is newer than the build. The vitest global set-up rebuilds when it does not; agent-process.ts refuses to spawn.
import { globSync, statSync } from "node:fs";
import { join, resolve } from "node:path";

export const repoRoot = resolve(import.meta.dirname, "../..");

/** Each source tree and the directory it is built into (one pair per package once the repo has several). */
export const builtTrees: readonly { readonly srcDir: string; readonly distDir: string }[] = [{ srcDir: join(repoRoot, "src"), distDir: join(repoRoot, "dist") }];

const builtInputs = ["**/*.ts", "**/*.json"];

/** Why `distDir` is out of date with `srcDir` (a missing or older built file), or undefined when it is current. */
export function staleReason(srcDir: string, distDir: string): string | undefined {
  const sources = globSync(builtInputs, { cwd: srcDir }).filter((file) => !file.endsWith(".d.ts"));
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
    if (reason !== undefined) throw new Error(`the built code is stale: ${reason}; run \`npm run build\` (vitest's global set-up does it)`);
  }
}
