// A pod as the kubernetes action's drain reads it (PodView), for the pure and drain-loop tests: a Running ReplicaSet
// pod of namespace "apps" with a 30 s grace period, changed by `over`.
import type { PodView } from "../../src/agent/actions/kubernetes/pods.js";

export const podView = (name: string, over: Partial<PodView> = {}): PodView => ({
  namespace: "apps",
  name,
  uid: `uid-${name}`,
  labels: {},
  annotations: {},
  controllerKinds: ["ReplicaSet"],
  phase: "Running",
  terminationGracePeriodSeconds: 30,
  hasEmptyDir: false,
  deletionTimestampMs: undefined,
  tolerations: [],
  priority: 0,
  priorityClassName: "",
  ...over,
});
