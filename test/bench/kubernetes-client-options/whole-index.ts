// Option "whole index" (the client before issue 35): `await import("@kubernetes/client-node")`, CoreV1Api.
import { coreV1, fiveCallsOverCoreV1 } from "./core-v1.js";
import { report } from "./measure.js";

const started = performance.now();
const k8s = await import("@kubernetes/client-node");
const core = coreV1(k8s);
const loaded = performance.now();
await fiveCallsOverCoreV1(k8s, core);
await report(started, loaded, performance.now());
