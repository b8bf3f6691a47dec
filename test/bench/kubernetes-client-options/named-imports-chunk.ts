// The named imports of the "named imports, tree-shaken" option (a chunk of its own, loaded on demand).
import { CoreV1Api, KubeConfig, PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import { coreV1, fiveCallsOverCoreV1 } from "./core-v1.js";

const parts = { CoreV1Api, KubeConfig, PatchStrategy, setHeaderOptions };

export const coreV1Parts = { build: () => coreV1(parts), calls: (core: CoreV1Api) => fiveCallsOverCoreV1(parts, core) };
