// esbuild bundles of the two shipped programs, each into an entry `.mjs` plus lazily loaded chunks: the agent
// (`src/agent/cli/main.ts`: run, check-config, tail, discover and the ledger commands, each loaded on demand; the Azure
// SDKs behind dynamic imports stay out of memory unless a configured sink needs them) and the fleet service
// (`src/fleet/cli/main.ts`, `sef-fleet`). Same inputs → same bytes.
import { build } from "esbuild";
import { readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";

export interface BundleResult {
  /** Files written, relative to the output directory, sorted. */
  readonly files: readonly string[];
  /** Source files that went into the bundle (repository-relative), for the "this program only" checks. */
  readonly inputs: readonly string[];
}

/** Lets the CommonJS dependencies (commander, undici, pino, the Azure SDKs) `require` inside an ES module bundle. */
const requireShim =
  'import { createRequire as sefCreateRequire } from "node:module"; const require = sefCreateRequire(import.meta.url);';

/** Bundles `entry` as `<name>.mjs` (+ chunks/) into `outDir`; packages resolve to their sources (the `source` condition). */
export async function bundleProgram(
  repoRoot: string,
  outDir: string,
  name: string,
  entry: string,
  define: Record<string, string>,
): Promise<BundleResult> {
  const result = await build({
    absWorkingDir: repoRoot,
    entryPoints: { [name]: entry },
    conditions: ["source"],
    outdir: outDir,
    bundle: true,
    splitting: true,
    format: "esm",
    platform: "node",
    target: "node24",
    outExtension: { ".js": ".mjs" },
    chunkNames: "chunks/[name]-[hash]",
    define,
    banner: { js: requireShim },
    minifyWhitespace: true,
    minifySyntax: true,
    legalComments: "eof",
    sourcemap: false,
    metafile: true,
    write: true,
    logLevel: "warning",
  });
  const files = Object.keys(result.metafile.outputs)
    .map((p) => relative(outDir, resolve(repoRoot, p)))
    .sort();
  const inputs = Object.keys(result.metafile.inputs).sort();
  return { files, inputs };
}

/** The agent: `sef.mjs`, with `version` stamped in (what `sef --version` and the records' AgentVersion say). */
export function bundleAgent(repoRoot: string, outDir: string, version: string): Promise<BundleResult> {
  return bundleProgram(repoRoot, outDir, "sef", "src/agent/cli/main.ts", {
    SEF_BUNDLED_AGENT_VERSION: JSON.stringify(version),
  });
}

/** The fleet service: `sef-fleet.mjs`, with the fleet package's version stamped in (what `sef-fleet --version` says). */
export function bundleFleet(repoRoot: string, outDir: string): Promise<BundleResult> {
  const { version } = JSON.parse(readFileSync(join(repoRoot, "src", "fleet", "package.json"), "utf8")) as {
    version: string;
  };
  return bundleProgram(repoRoot, outDir, "sef-fleet", "src/fleet/cli/main.ts", {
    SEF_BUNDLED_FLEET_VERSION: JSON.stringify(version),
  });
}
