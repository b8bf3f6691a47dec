// `npm run build`: transpiles every module of src/ to dist/ one file for one file (esbuild, no bundling) and copies
// the simulator's built-in scenarios beside it. Type checking is `npm run typecheck` (tsc) — this step only strips
// types, so the tree under dist/ mirrors src/ exactly as `tsc` would emit it (isolatedModules and
// verbatimModuleSyntax guarantee each file can be transpiled alone). Stale files from a previous build are removed.
import { build } from "esbuild";
import { cpSync, globSync, rmSync } from "node:fs";

const started = performance.now();
rmSync("dist", { recursive: true, force: true });
const entryPoints = globSync("src/**/*.ts").filter((file) => !file.endsWith(".d.ts"));
await build({
  entryPoints,
  outdir: "dist",
  outbase: "src",
  format: "esm",
  platform: "node",
  target: "node24",
  sourcemap: true,
  bundle: false,
  logLevel: "warning",
});
cpSync("src/testbed/simulator/scenarios", "dist/testbed/simulator/scenarios", { recursive: true });
console.log(`built ${entryPoints.length} modules into dist/ in ${Math.round(performance.now() - started)} ms`);
