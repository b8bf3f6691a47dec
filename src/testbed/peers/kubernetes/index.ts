// The local Kubernetes API peer's public surface: start it, seed it, read back what clients did.
export { startKubernetesPeer, defaultCloseDeadlineMs, type KubernetesPeer, type KubernetesPeerOptions } from "./server.js";
export { KubernetesPeerState, type RequestRecord } from "./state.js";
export { mirrorPodAnnotation, type KubernetesSeed, type NodeSeed, type PodSeed, type OwnerSeed, type DaemonSetSeed, type PodDisruptionBudgetSeed } from "./seed.js";
export type { EvictionRecord, StoreClock } from "./store.js";
export type { KubeObject, Taint, OwnerReference } from "./objects.js";
export { budgetRefusal } from "./evictions.js";
export { kubeconfigContextName } from "./kubeconfig.js";
