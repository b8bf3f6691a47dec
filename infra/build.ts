// `npm run build`: transpiles each workspace package under src/ (contract, retry, errors, redaction, runtime, agent,
// fleet, testbed) into its own dist/ one file for one file (esbuild, no bundling) and copies the simulator's built-in
// scenarios beside it. Type checking is `npm run typecheck` (tsc) — this step only strips types, so each package's
// dist/ mirrors its sources exactly as `tsc` would emit them (isolatedModules and verbatimModuleSyntax guarantee each
// file can be transpiled alone). A package imports another by name (`@sef/contract/record.js`), which resolves to that
// package's dist/ at run time. Stale files from a previous build are removed.
import { build } from "esbuild";
import { cpSync, globSync, rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const repo = fileURLToPath(new URL("..", import.meta.url));

/** The workspace packages, each a folder of src/ with its own package.json and dist/. */
export const workspacePackages = [
  "contract",
  "retry",
  "errors",
  "redaction",
  "runtime",
  "agent",
  "fleet",
  "testbed",
] as const;

/** Builds one package's sources into its dist/ (replacing it); returns the number of modules. */
async function buildPackage(name: (typeof workspacePackages)[number]): Promise<number> {
  const packageDir = join(repo, "src", name);
  const outDir = join(packageDir, "dist");
  rmSync(outDir, { recursive: true, force: true });
  const entryPoints = globSync("**/*.ts", {
    cwd: packageDir,
    exclude: (path) => path === "dist" || path === "node_modules",
  })
    .filter((file) => !file.endsWith(".d.ts"))
    .map((file) => join(packageDir, file));
  await build({
    entryPoints,
    outdir: outDir,
    outbase: packageDir,
    format: "esm",
    platform: "node",
    target: "node24",
    sourcemap: true,
    bundle: false,
    logLevel: "warning",
  });
  if (name === "testbed")
    cpSync(join(packageDir, "simulator", "scenarios"), join(outDir, "simulator", "scenarios"), { recursive: true });
  return entryPoints.length;
}

/** Builds every workspace package; returns the number of modules. */
export async function buildAll(): Promise<number> {
  let modules = 0;
  for (const name of workspacePackages) modules += await buildPackage(name);
  return modules;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const started = performance.now();
  const modules = await buildAll();
  console.log(`built ${modules} modules into src/*/dist/ in ${Math.round(performance.now() - started)} ms`);
}
