// The local Kubernetes API peer's public surface: start it, seed it, inject faults, read back what clients did.
export {
  startKubernetesPeer,
  defaultCloseDeadlineMs,
  type KubernetesPeer,
  type KubernetesPeerOptions,
} from "./server.js";
export { KubernetesPeerState } from "./state.js";
export {
  mirrorPodAnnotation,
  type KubernetesSeed,
  type NodeSeed,
  type PodSeed,
  type OwnerSeed,
  type DaemonSetSeed,
  type PodDisruptionBudgetSeed,
  type LeaseSeed,
} from "./seed.js";
export type {
  EvictionRecord,
  NodeWriteRecord,
  LeaseWriteRecord,
  RequestRecord,
  PeerStats,
  EvictionCounts,
  NodeMarkTimes,
  Stamp,
} from "./peer-log.js";
export type { StoreClock } from "./store.js";
export type { KubeObject, Taint, Toleration, OwnerReference } from "./objects.js";
export type { FaultRule, FaultMatch, FaultAnswer, FaultRuleState } from "./faults.js";
export { apfHeaders, flowSchemaUid, priorityLevelUid, throttledBody } from "./fault-answers.js";
export type { ReturningPodsRule, ReturnedPodRecord } from "./returning-pods.js";
export type { StopsAfter } from "./pod-lifecycle.js";
export { azureProviderID, aksNodeName, azureNodeSeed } from "./azure-nodes.js";
export { budgetRefusal } from "./evictions.js";
export { kubeconfigContextName } from "./kubeconfig.js";
