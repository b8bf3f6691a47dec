// Runs the unmodified kubectl 1.33 (from the layer package, test/helpers/kubectl-layer.ts) against a kubeconfig,
// asynchronously (the peer under test answers from the same process), with its own HOME and a deadline.
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { kubectlPath } from "../helpers/kubectl-layer.js";

export interface KubectlResult {
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
  readonly elapsedMs: number;
}

// kubectl keeps its discovery cache under HOME: one throw-away HOME per test file (removeKubectlHome in afterAll).
const home = mkdtempSync(join(tmpdir(), "sef-kubectl-home-"));

export function removeKubectlHome(): void {
  rmSync(home, { recursive: true, force: true });
}

export async function kubectl(
  kubeconfigPath: string,
  args: readonly string[],
  deadlineMs = 60_000,
): Promise<KubectlResult> {
  const binary = kubectlPath();
  const startedMs = performance.now();
  return new Promise((resolve, reject) => {
    execFile(
      binary,
      ["--kubeconfig", kubeconfigPath, ...args],
      { encoding: "utf8", timeout: deadlineMs, killSignal: "SIGKILL", env: { PATH: "/usr/bin:/bin", HOME: home } },
      (error, stdout, stderr) => {
        const elapsedMs = performance.now() - startedMs;
        if (error && typeof error.code !== "number")
          reject(new Error(`kubectl ${args.join(" ")} did not finish: ${error.message}\n${stderr}`));
        else resolve({ exitCode: error ? Number(error.code) : 0, stdout, stderr, elapsedMs });
      },
    );
  });
}
