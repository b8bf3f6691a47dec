// Config section `kubernetes` (pure): what the agent does to its own Kubernetes node for each EventType, and the
// timings of a drain. Present = the action is on (the Kubernetes client is loaded only then); absent = forwarding only.
import * as z from "zod/mini";
import "../../util/zod-locale.js";

/**
 * What a Scheduled event does to the node, in increasing order: none (forward only) · taint (NoSchedule taint and
 * annotations) · cordon (taint, then cordon) · drain (cordon, then evict the pods) · drain-then-approve (drain, then
 * POST the approval so the event starts as soon as the node is empty).
 */
export const nodePolicies = ["none", "taint", "cordon", "drain", "drain-then-approve"] as const;
export type NodePolicy = (typeof nodePolicies)[number];

/** The EventTypes IMDS documents; any other type uses `policy.other`. */
export const knownEventTypes = ["Freeze", "Reboot", "Redeploy", "Preempt", "Terminate"] as const;

export const defaultNodePolicies: Readonly<Record<(typeof knownEventTypes)[number] | "other", NodePolicy>> = {
  Freeze: "none",
  Reboot: "drain-then-approve",
  Redeploy: "drain-then-approve",
  Preempt: "drain-then-approve",
  Terminate: "drain-then-approve",
  other: "none",
};

export const kubernetesDefaults = {
  /** Drains start this long before NotBefore (10 min: a 15-minute Reboot notice is tainted and cordoned at once, drained 5 min later). */
  drainLeadMs: 10 * 60_000,
  /** The drain's deadline is NotBefore minus this (time for the last pods to stop and the approval to go out). */
  deadlineReserveMs: 5_000,
  /** A PodDisruptionBudget refusal (HTTP 429) is retried after this, doubling up to `pdbRetryMaxMs`. */
  pdbRetryInitialMs: 1_000,
  pdbRetryMaxMs: 15_000,
  /** Each Kubernetes API request is given up after this. */
  requestTimeoutMs: 10_000,
  /** How often the pods left on the node are listed while waiting for evicted pods to go. */
  podPollMs: 1_000,
} as const;

const ms = z.number().check(z.int(), z.nonnegative());
const policy = z.enum(nodePolicies);

export const kubernetesSettingsSchema = z.strictObject({
  /** This node's name; default: the NODE_NAME environment variable (the chart sets it from the downward API). */
  nodeName: z.optional(z.string().check(z.minLength(1))),
  /** What each EventType does to the node (see `nodePolicies`); types not listed use `other`. */
  policy: z._default(
    z.strictObject({
      Freeze: z._default(policy, defaultNodePolicies.Freeze),
      Reboot: z._default(policy, defaultNodePolicies.Reboot),
      Redeploy: z._default(policy, defaultNodePolicies.Redeploy),
      Preempt: z._default(policy, defaultNodePolicies.Preempt),
      Terminate: z._default(policy, defaultNodePolicies.Terminate),
      other: z._default(policy, defaultNodePolicies.other),
    }),
    { ...defaultNodePolicies },
  ),
  /** Milliseconds before NotBefore at which the drain starts (earlier notices wait, tainted and cordoned). */
  drainLeadMs: z._default(ms, kubernetesDefaults.drainLeadMs),
  /** Milliseconds before NotBefore by which the drain must be over (its deadline). */
  deadlineReserveMs: z._default(ms, kubernetesDefaults.deadlineReserveMs),
  /** First wait after a PodDisruptionBudget refusal, in milliseconds. */
  pdbRetryInitialMs: z._default(z.number().check(z.int(), z.positive()), kubernetesDefaults.pdbRetryInitialMs),
  /** Longest wait between retries of a refused eviction, in milliseconds. */
  pdbRetryMaxMs: z._default(z.number().check(z.int(), z.positive()), kubernetesDefaults.pdbRetryMaxMs),
  /** Evict pods with emptyDir volumes (their data is lost, as with `kubectl drain --delete-emptydir-data`). */
  evictEmptyDir: z._default(z.boolean(), true),
  /** After a complete drain, also taint NoExecute (never before: a NoExecute taint evicts without PodDisruptionBudgets). */
  noExecuteTaintAfterDrain: z._default(z.boolean(), false),
  /** Kubeconfig file (tests, running outside a cluster); default: the in-cluster service account. */
  kubeconfig: z.optional(z.string().check(z.minLength(1))),
  /** Timeout of each Kubernetes API request, in milliseconds. */
  requestTimeoutMs: z._default(z.number().check(z.int(), z.positive()), kubernetesDefaults.requestTimeoutMs),
  /** Period of listing the pods left while evicted pods terminate, in milliseconds. */
  podPollMs: z._default(z.number().check(z.int(), z.positive()), kubernetesDefaults.podPollMs),
});
export type KubernetesSettings = z.infer<typeof kubernetesSettingsSchema>;

/** The policy for an EventType (case-insensitive; unknown types use `other`). */
export function policyFor(settings: Pick<KubernetesSettings, "policy">, eventType: string): NodePolicy {
  const known = knownEventTypes.find((t) => t.toLowerCase() === eventType.toLowerCase());
  return settings.policy[known ?? "other"];
}

/** Whether a policy includes the step: each policy does everything the ones before it do. */
export function policyIncludes(policy: NodePolicy, step: Exclude<NodePolicy, "none">): boolean {
  return nodePolicies.indexOf(policy) >= nodePolicies.indexOf(step);
}
