// Shared by the option entries of test/bench/kubernetes-client-options.ts: the five calls the kubernetes action makes
// (read, merge-patch the Node; list its pods; evict one; an Event on the Node), over plain node:https or client-node's
// CoreV1Api, and the one JSON line each entry prints after idling: load and first-calls time, RSS and heap.
import type * as Https from "node:https";

export interface Peer {
  url: string;
  caFile: string;
  token: string;
  kubeconfig: string;
  node: string;
}

export const peer = JSON.parse(process.env.SEF_BENCH_K8S_PEER ?? "{}") as Peer;

/** The five calls over node:https: `headers` gives each request's credentials. */
export async function fiveCallsOverHttps(
  server: string,
  agent: Https.Agent,
  headers: () => Promise<Record<string, string>>,
): Promise<void> {
  const https = process.getBuiltinModule("node:https") as typeof Https;
  const send = async (
    method: string,
    path: string,
    body?: unknown,
    contentType = "application/json",
  ): Promise<{ status: number; json: { metadata?: { resourceVersion?: string; uid?: string } } }> => {
    const h = { ...(await headers()), Accept: "application/json", ...(body ? { "Content-Type": contentType } : {}) };
    return new Promise((resolve, reject) => {
      const request = https.request(
        `${server}${path}`,
        { method, agent, headers: h, signal: AbortSignal.timeout(10_000) },
        (response) => {
          const chunks: Buffer[] = [];
          response.on("data", (c: Buffer) => chunks.push(c));
          response.on("end", () =>
            resolve({ status: response.statusCode ?? 0, json: JSON.parse(Buffer.concat(chunks).toString() || "{}") }),
          );
        },
      );
      request.on("error", reject);
      request.end(body ? JSON.stringify(body) : undefined);
    });
  };
  const node = await send("GET", `/api/v1/nodes/${peer.node}`);
  if (node.status !== 200) throw new Error(`GET node: ${node.status}`);
  const patch = {
    metadata: { resourceVersion: node.json.metadata?.resourceVersion, annotations: { "sef.azure.com/bench": "1" } },
  };
  await send("PATCH", `/api/v1/nodes/${peer.node}`, patch, "application/merge-patch+json");
  await send("GET", `/api/v1/pods?fieldSelector=${encodeURIComponent(`spec.nodeName=${peer.node}`)}`);
  await send("POST", "/api/v1/namespaces/apps/pods/web-9/eviction", {
    apiVersion: "policy/v1",
    kind: "Eviction",
    metadata: { name: "web-9", namespace: "apps" },
  });
  await send("POST", "/api/v1/namespaces/default/events", eventBody(node.json.metadata?.uid ?? ""));
}

export function eventBody(uid: string) {
  return {
    metadata: { generateName: `${peer.node}.sef.` },
    involvedObject: { kind: "Node", name: peer.node, uid },
    reason: "Bench",
    message: "bench",
    type: "Normal",
  };
}

/** Idles `SEF_BENCH_K8S_OPTION_IDLE_S` seconds, then prints the figures as one JSON line. */
export async function report(startedMs: number, loadedMs: number, calledMs: number): Promise<void> {
  await new Promise((r) => setTimeout(r, Number(process.env.SEF_BENCH_K8S_OPTION_IDLE_S ?? 10) * 1000));
  const m = process.memoryUsage();
  const mb = (bytes: number): number => Math.round(bytes / 2 ** 20 / 0.1) / 10;
  console.log(
    JSON.stringify({
      loadMs: Math.round(loadedMs - startedMs),
      firstCallsMs: Math.round(calledMs - loadedMs),
      rssMb: mb(m.rss),
      heapUsedMb: mb(m.heapUsed),
      externalMb: mb(m.external),
    }),
  );
}
