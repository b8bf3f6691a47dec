// `npm run build`: transpiles every module of src/ to dist/ one file for one file (esbuild, no bundling) and copies
// the simulator's built-in scenarios beside it. Type checking is `npm run typecheck` (tsc) — this step only strips
// types, so the tree under dist/ mirrors src/ exactly as `tsc` would emit it (isolatedModules and
// verbatimModuleSyntax guarantee each file can be transpiled alone). Stale files from a previous build are removed.
import { build } from "esbuild";
import { cpSync, globSync, rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const repo = fileURLToPath(new URL("..", import.meta.url));

/** Builds src/ of this repository into `outDir` (replacing it); returns the number of modules. */
export async function buildInto(outDir: string): Promise<number> {
  rmSync(outDir, { recursive: true, force: true });
  const entryPoints = globSync("src/**/*.ts", { cwd: repo })
    .filter((file) => !file.endsWith(".d.ts"))
    .map((file) => join(repo, file));
  await build({
    entryPoints,
    outdir: outDir,
    outbase: join(repo, "src"),
    format: "esm",
    platform: "node",
    target: "node24",
    sourcemap: true,
    bundle: false,
    logLevel: "warning",
  });
  cpSync(join(repo, "src", "testbed", "simulator", "scenarios"), join(outDir, "testbed", "simulator", "scenarios"), { recursive: true });
  return entryPoints.length;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const started = performance.now();
  const modules = await buildInto(join(repo, "dist"));
  console.log(`built ${modules} modules into dist/ in ${Math.round(performance.now() - started)} ms`);
}
