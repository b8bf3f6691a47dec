// `sef-testbed emulate kubernetes`: the local Kubernetes API peer (see peers/kubernetes/README.md), seeded from a
// JSON file (objects, fault rules, returning-pod rules), driven further over /__peer/, serving until SIGTERM/SIGINT;
// prints the URL and where the kubeconfig, CA and token files are.
import { readFile } from "node:fs/promises";
import type { Command } from "commander";
import type { KubernetesSeed } from "../peers/kubernetes/index.js";
import { peerCommand, servePeer } from "./options.js";

interface EmulateKubernetesFlags {
  port: number;
  host: string;
  token?: string;
  kubeconfigOut?: string;
  seed?: string;
  logLevel: string;
}

async function readSeed(path: string): Promise<KubernetesSeed> {
  const parsed = JSON.parse(await readFile(path, "utf8")) as unknown;
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
    throw new Error(
      `${path}: a seed file holds one JSON object (nodes, pods, daemonSets, podDisruptionBudgets, leases, namespaces, faults, returningPods)`,
    );
  return parsed as KubernetesSeed;
}

function runEmulateKubernetes(flags: EmulateKubernetesFlags): Promise<void> {
  return servePeer(
    flags.logLevel,
    async (logger) => {
      const { startKubernetesPeer } = await import("../peers/kubernetes/index.js");
      return startKubernetesPeer({
        port: flags.port,
        host: flags.host,
        ...(flags.token ? { token: flags.token } : {}),
        ...(flags.kubeconfigOut ? { kubeconfigPath: flags.kubeconfigOut } : {}),
        ...(flags.seed ? { seed: await readSeed(flags.seed) } : {}),
        logger,
      });
    },
    {
      ready: (peer, logger) => {
        process.stdout.write(`sef-testbed emulate kubernetes listening on ${peer.url}\n`);
        process.stdout.write(`kubeconfig: ${peer.kubeconfigPath}\n`);
        process.stderr.write(`CA certificate: ${peer.caFile}\ntoken file: ${peer.tokenFile}\n`);
        logger.info(
          { url: peer.url, nodes: peer.state.nodes().length, pods: peer.state.pods().length },
          "kubernetes peer ready",
        );
      },
      stopped: (peer, logger) =>
        logger.info(
          {
            evictions: peer.state.evictions().length,
            events: peer.state.events().length,
            requests: peer.state.stats().requests,
          },
          "kubernetes peer stopped",
        ),
    },
  );
}

export function registerEmulateKubernetesCommand(emulate: Command): void {
  peerCommand(emulate, {
    name: "kubernetes",
    description:
      "local HTTPS Kubernetes API peer (nodes, pods, evictions with PodDisruptionBudgets, events, Leases; fault injection and logs under /__peer/) for kubectl and @kubernetes/client-node",
  })
    .option("--token <token>", "bearer token clients must send (default: a random one, written to the token file)")
    .option("--kubeconfig-out <file>", "where to write the kubeconfig (default: a temporary file removed on exit)")
    .option(
      "--seed <file>",
      "JSON file with nodes, pods, daemonSets, podDisruptionBudgets, leases, namespaces, faults, returningPods (see the peer's README)",
    )
    .option("--log-level <level>", "log level (logs go to stderr)", "info")
    .action(async (flags: EmulateKubernetesFlags) => runEmulateKubernetes(flags));
}
