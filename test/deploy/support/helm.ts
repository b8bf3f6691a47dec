// The Helm CLI for chart tests, from the kubectl layer package (test/helpers/kubectl-layer.ts): unzipped once into
// node_modules/.cache, no download.
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { helmPath } from "../../helpers/kubectl-layer.js";
import { repoRoot } from "./bicep.js";

export { helmPath };

let valuesFiles = 0;

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

/**
 * `helm template sef infra/helm/sef --namespace sef-system` with `overrides` as a values file (JSON is YAML) written into
 * `home`; the manifests parsed strictly (a YAML error or warning throws), or helm's exit status and stderr.
 */
export function templateChart(
  overrides: object,
  home: string,
): { status: number | null; stderr: string; manifests: unknown[] } {
  const values = join(home, `values-${process.pid}-${++valuesFiles}.json`);
  writeFileSync(values, JSON.stringify(overrides));
  const result = runHelm(["template", "sef", "infra/helm/sef", "--namespace", "sef-system", "--values", values], home);
  const manifests: unknown[] = [];
  if (result.status === 0) {
    for (const doc of parseAllDocuments(result.stdout, { uniqueKeys: true })) {
      if (doc.errors.length > 0 || doc.warnings.length > 0)
        throw new Error([...doc.errors, ...doc.warnings].join("\n"));
      const value: unknown = doc.toJS();
      if (value !== null) manifests.push(value);
    }
  }
  return { status: result.status, stderr: result.stderr, manifests };
}
