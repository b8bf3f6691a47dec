// Bundles the agent (`src/agent/cli/main.ts`: run, tail) with esbuild into `sef.mjs` plus lazily loaded chunks (the Azure
// SDKs behind dynamic imports stay out of memory unless a configured sink needs them). Same inputs → same bytes.
import { build } from "esbuild";
import { relative, resolve } from "node:path";

export interface BundleResult {
  /** Files written, relative to the output directory, sorted. */
  readonly files: readonly string[];
  /** Source files that went into the bundle (repository-relative), for the "agent only" checks. */
  readonly inputs: readonly string[];
}

/** Lets the CommonJS dependencies (commander, undici, pino, the Azure SDKs) `require` inside an ES module bundle. */
const requireShim = 'import { createRequire as sefCreateRequire } from "node:module"; const require = sefCreateRequire(import.meta.url);';

export async function bundleAgent(repoRoot: string, outDir: string, version: string): Promise<BundleResult> {
  const result = await build({
    absWorkingDir: repoRoot,
    entryPoints: { sef: "src/agent/cli/main.ts" },
    conditions: ["source"],
    outdir: outDir,
    bundle: true,
    splitting: true,
    format: "esm",
    platform: "node",
    target: "node24",
    outExtension: { ".js": ".mjs" },
    chunkNames: "chunks/[name]-[hash]",
    define: { SEF_BUNDLED_AGENT_VERSION: JSON.stringify(version) },
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
