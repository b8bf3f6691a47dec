// What each way of talking to the Kubernetes API costs, side by side in one run: each option (an entry under
// kubernetes-client-options/) bundled as the packages bundle the agent (infra/package/bundle.ts) and run alone with
// the launcher's V8 flags against the local Kubernetes API peer: load time, time of the first five calls, and RSS and
// heap after idling. Rounds alternate the options; the medians are reported.
// Run alone: `npx tsx test/bench/kubernetes-client-options.ts [rounds] [idleSeconds]`.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { bundleProgram } from "../../infra/package/bundle.js";
import { startKubernetesPeer } from "../../src/testbed/peers/kubernetes/index.js";
import { launcherRunFlags } from "../helpers/agent-process.js";
import { percentile } from "./agent-latency.js";

export const clientOptions = {
  nothing: "Node with the launcher's flags, nothing loaded",
  "bare-https": "node:https, token and CA by hand (the floor of any client)",
  lean: "sef's client: client-node's credential parts + plain JSON over node:https (kept)",
  "kubeconfig-only": "client-node's KubeConfig alone (dist/config.js) + node:https",
  "named-imports": "named imports from client-node's index, tree-shaken by esbuild",
  "whole-index": "client-node's whole index, CoreV1Api (the client before issue 35)",
} as const;

export type ClientOption = keyof typeof clientOptions;

export interface ClientOptionFigures {
  option: ClientOption;
  what: string;
  /** Modules esbuild put into the bundle, and the bundle's size (entry + chunks). */
  bundledModules: number;
  bundleKb: number;
  loadMs: number;
  firstCallsMs: number;
  rssMb: number;
  heapUsedMb: number;
  externalMb: number;
}

interface RunFigures {
  loadMs: number;
  firstCallsMs: number;
  rssMb: number;
  heapUsedMb: number;
  externalMb: number;
}

const repoRoot = resolve(import.meta.dirname, "../..");

async function bundleOption(
  option: ClientOption,
  outDir: string,
): Promise<{ entry: string; modules: number; kb: number }> {
  const result = await bundleProgram(repoRoot, outDir, option, `test/bench/kubernetes-client-options/${option}.ts`, {});
  const kb = result.files.reduce((sum, file) => sum + statSync(join(outDir, file)).size, 0) / 1024;
  return { entry: join(outDir, `${option}.mjs`), modules: result.inputs.length, kb: Math.round(kb) };
}

function runOption(entry: string, env: NodeJS.ProcessEnv): Promise<RunFigures> {
  const child = spawn(process.execPath, [...launcherRunFlags(), entry], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()));
  return new Promise((resolvePromise, reject) => {
    const deadline = setTimeout(() => child.kill("SIGKILL"), 120_000);
    child.on("exit", (code) => {
      clearTimeout(deadline);
      const line = out.trim().split("\n").at(-1) ?? "";
      if (code === 0 && line.startsWith("{")) resolvePromise(JSON.parse(line) as RunFigures);
      else reject(new Error(`${entry} exited ${code}: ${err.slice(-1500)}`));
    });
  });
}

export async function benchKubernetesClientOptions(
  rounds = 2,
  idleSeconds = 10,
  options = Object.keys(clientOptions) as ClientOption[],
): Promise<ClientOptionFigures[]> {
  const scratch = mkdtempSync(join(tmpdir(), "sef-bench-k8s-options-"));
  const pods = Array.from({ length: 20 }, (_, i) => ({
    namespace: "apps",
    name: `web-${i}`,
    nodeName: "n1",
    ownerReferences: [{ kind: "ReplicaSet", name: "web" }],
  }));
  const peer = await startKubernetesPeer({ seed: { nodes: [{ name: "n1", providerID: "azure:///bench" }], pods } });
  try {
    const bundles = new Map<ClientOption, Awaited<ReturnType<typeof bundleOption>>>();
    for (const option of options) bundles.set(option, await bundleOption(option, join(scratch, option)));
    const env = {
      SEF_BENCH_K8S_PEER: JSON.stringify({
        url: peer.url,
        caFile: peer.caFile,
        token: peer.token,
        kubeconfig: peer.kubeconfigPath,
        node: "n1",
      }),
      SEF_BENCH_K8S_OPTION_IDLE_S: String(idleSeconds),
    };
    const runs = new Map<ClientOption, RunFigures[]>(options.map((o) => [o, []]));
    for (let round = 0; round < rounds; round++)
      for (const option of options) runs.get(option)!.push(await runOption(bundles.get(option)!.entry, env));
    return options.map((option) => {
      const taken = runs.get(option)!;
      const median = (pick: (r: RunFigures) => number): number => percentile(taken.map(pick), 50);
      const bundle = bundles.get(option)!;
      return {
        option,
        what: clientOptions[option],
        bundledModules: bundle.modules,
        bundleKb: bundle.kb,
        loadMs: median((r) => r.loadMs),
        firstCallsMs: median((r) => r.firstCallsMs),
        rssMb: median((r) => r.rssMb),
        heapUsedMb: median((r) => r.heapUsedMb),
        externalMb: median((r) => r.externalMb),
      };
    });
  } finally {
    await peer.close();
    rmSync(scratch, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const figures = await benchKubernetesClientOptions(Number(process.argv[2] ?? 3), Number(process.argv[3] ?? 10));
  console.table(figures);
}
