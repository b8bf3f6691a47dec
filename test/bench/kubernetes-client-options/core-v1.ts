// The five calls through client-node's generated CoreV1Api (for the "named imports" and "whole index" options).
import type * as K8s from "@kubernetes/client-node";
import { eventBody, peer } from "./measure.js";

type Parts = Pick<typeof K8s, "KubeConfig" | "CoreV1Api" | "setHeaderOptions" | "PatchStrategy">;

/** Builds the API (kubeconfig, CoreV1Api): the part of the load after the modules are in. */
export function coreV1(k8s: Parts): K8s.CoreV1Api {
  const config = new k8s.KubeConfig();
  config.loadFromFile(peer.kubeconfig);
  return config.makeApiClient(k8s.CoreV1Api);
}

export async function fiveCallsOverCoreV1(k8s: Parts, core: K8s.CoreV1Api): Promise<void> {
  const name = peer.node;
  const node = await core.readNode({ name });
  const body = {
    metadata: { resourceVersion: node.metadata?.resourceVersion, annotations: { "sef.azure.com/bench": "1" } },
  };
  await core.patchNode({ name, body }, k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch));
  await core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${name}` });
  const eviction = { apiVersion: "policy/v1", kind: "Eviction", metadata: { name: "web-9", namespace: "apps" } };
  await core.createNamespacedPodEviction({ name: "web-9", namespace: "apps", body: eviction }).catch(() => undefined);
  await core.createNamespacedEvent({ namespace: "default", body: eventBody(node.metadata?.uid ?? "") });
}
