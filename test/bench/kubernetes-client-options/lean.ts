// Option "lean" (the one kept): sef's client, client-node's credential parts (kubeconfig entries, ExecAuth, FileAuth)
// and plain JSON over node:https, the five calls through KubeApi.
import { peer, report } from "./measure.js";

const started = performance.now();
const { createKubeApi } = await import("../../../src/agent/actions/kubernetes/client.js");
const api = await createKubeApi({ kubeconfig: peer.kubeconfig, requestTimeoutMs: 10_000 });
const loaded = performance.now();
const node = await api.readNode(peer.node);
await api.patchNode(
  peer.node,
  { taints: node.taints, annotations: { "sef.azure.com/bench": "1" } },
  node.resourceVersion,
);
await api.listPods(peer.node);
await api.evict({ namespace: "apps", name: "web-9", uid: "" }, 30);
await api.nodeEvent(node, "Bench", "bench", "Normal");
await report(started, loaded, performance.now());
