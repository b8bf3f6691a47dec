// Option "named imports, tree-shaken": `import { KubeConfig, CoreV1Api, … } from "@kubernetes/client-node"` in a
// module loaded on demand, so esbuild keeps only what those names reach.
import { report } from "./measure.js";

const started = performance.now();
const { coreV1Parts } = await import("./named-imports-chunk.js");
const core = coreV1Parts.build();
const loaded = performance.now();
await coreV1Parts.calls(core);
await report(started, loaded, performance.now());
