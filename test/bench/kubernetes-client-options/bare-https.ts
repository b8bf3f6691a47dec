// Option "bare node:https": the five calls with a bearer token and the CA read by hand, no kubeconfig (what any
// client must load at least: TLS and HTTPS).
import { readFileSync } from "node:fs";
import type * as Https from "node:https";
import { fiveCallsOverHttps, peer, report } from "./measure.js";

const started = performance.now();
const https = process.getBuiltinModule("node:https") as typeof Https;
const agent = new https.Agent({ keepAlive: true, ca: readFileSync(peer.caFile) });
const loaded = performance.now();
await fiveCallsOverHttps(peer.url, agent, async () => ({ Authorization: `Bearer ${peer.token}` }));
await report(started, loaded, performance.now());
