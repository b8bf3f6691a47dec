// Option "KubeConfig only": client-node's KubeConfig imported alone (dist/config.js, which still imports the generated
// API's index for makeApiClient), applyToHTTPSOptions for the agent and headers, the five calls over node:https.
import type * as Https from "node:https";
import { fiveCallsOverHttps, peer, report } from "./measure.js";

const started = performance.now();
const { KubeConfig } = await import("@kubernetes/client-node/dist/config.js");
const config = new KubeConfig();
config.loadFromFile(peer.kubeconfig);
const loaded = performance.now();
const options = async (): Promise<Https.RequestOptions> => {
  const opts: Https.RequestOptions = {};
  await config.applyToHTTPSOptions(opts);
  return opts;
};
const first = await options();
await fiveCallsOverHttps(
  config.getCurrentCluster()!.server,
  first.agent as Https.Agent,
  async () => (await options()).headers as Record<string, string>,
);
await report(started, loaded, performance.now());
