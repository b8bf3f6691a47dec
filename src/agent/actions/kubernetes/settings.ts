// Config section `kubernetes` (pure): what the agent does to its own Kubernetes node for each EventType, and the
// timings of a drain. Present = the action is on (the Kubernetes client is loaded only then); absent = forwarding only.
import * as z from "zod/mini";
import "../../util/zod-locale.js";
import { documented, msSetting, nonNegativeMs } from "../../util/setting-doc.js";

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

/**
 * What a drain does at its deadline with pods still refused by a PodDisruptionBudget or still terminating: `delete`
 * them with the time left before NotBefore as their grace (their SIGTERM comes before the VM goes), or `leave` them.
 */
export const deadlineActions = ["delete", "leave"] as const;
export type DeadlineAction = (typeof deadlineActions)[number];

/** Delete where the VM goes whatever happens (Spot eviction, scale-set deletion); leave where it comes back. */
export const defaultDeadlineActions: Readonly<Record<(typeof knownEventTypes)[number] | "other", DeadlineAction>> = {
  Freeze: "leave",
  Reboot: "leave",
  Redeploy: "leave",
  Preempt: "delete",
  Terminate: "delete",
  other: "leave",
};

/** The label that takes a node out of external load balancers' backends (the service controller honours it). */
export const excludeFromLoadBalancersLabel = "node.kubernetes.io/exclude-from-external-load-balancers";

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

const atDeadline = (type: string, action: DeadlineAction) =>
  documented(z._default(z.enum(deadlineActions), action), {
    description: `At a ${type}'s drain deadline: delete the pods still held (grace = the time left) or leave them.`,
  });
const policy = (type: string, defaultPolicy: NodePolicy) =>
  documented(z._default(z.enum(nodePolicies), defaultPolicy), {
    description: `What a Scheduled ${type} does to the node.`,
  });

export const kubernetesSettingsSchema = z.strictObject({
  nodeName: documented(z.optional(z.string().check(z.minLength(1))), {
    description: "This node's name (the chart sets `NODE_NAME` from the downward API).",
    defaultText: "the `NODE_NAME` environment variable",
  }),
  policy: documented(
    z._default(
      z.strictObject({
        Freeze: policy("Freeze (forward only by default; `taint` to mark the node)", defaultNodePolicies.Freeze),
        Reboot: policy("Reboot", defaultNodePolicies.Reboot),
        Redeploy: policy("Redeploy", defaultNodePolicies.Redeploy),
        Preempt: policy("Preempt (Spot eviction, 30 s notice)", defaultNodePolicies.Preempt),
        Terminate: policy("Terminate (scale-set deletion)", defaultNodePolicies.Terminate),
        other: policy("event of any other EventType", defaultNodePolicies.other),
      }),
      { ...defaultNodePolicies },
    ),
    { description: "What each EventType does to this VM's node (see src/agent/actions/kubernetes/README.md)." },
  ),
  atDeadline: documented(
    z._default(
      z.strictObject({
        Freeze: atDeadline("Freeze", defaultDeadlineActions.Freeze),
        Reboot: atDeadline("Reboot", defaultDeadlineActions.Reboot),
        Redeploy: atDeadline("Redeploy", defaultDeadlineActions.Redeploy),
        Preempt: atDeadline("Preempt", defaultDeadlineActions.Preempt),
        Terminate: atDeadline("Terminate", defaultDeadlineActions.Terminate),
        other: atDeadline("event of any other EventType", defaultDeadlineActions.other),
      }),
      { ...defaultDeadlineActions },
    ),
    {
      description:
        "What a drain does at its deadline (`NotBefore` minus `deadlineReserveMs`) with pods still refused by a PodDisruptionBudget or still terminating: `delete` them with the time left as their grace period, or `leave` them.",
    },
  ),
  excludeFromLoadBalancers: documented(z._default(z.boolean(), true), {
    description: `Label the node \`${excludeFromLoadBalancersLabel}\` with the taint (external load balancers stop sending it new connections before it goes); taken off with sef's other marks, never when someone else put it on.`,
  }),
  podSelector: documented(z._default(z.string(), ""), {
    description:
      "Label selector of the pods a drain evicts (as `kubectl drain --pod-selector`); pods it does not select are not touched and do not hold the drain. Empty: every pod.",
  }),
  maxConcurrentDrains: documented(
    z.optional(
      z.strictObject({
        limit: documented(z.number().check(z.int(), z.positive()), {
          description: "Nodes of the cluster that may drain at once.",
        }),
        namespace: documented(z.optional(z.string().check(z.minLength(1))), {
          description: "Namespace of the Leases `sef-drain-0` … `sef-drain-<limit-1>`.",
          defaultText: "sef's own namespace (`POD_NAMESPACE`), else `default`",
        }),
        leaseDurationSeconds: documented(z._default(z.number().check(z.int(), z.positive()), 60), {
          description:
            "A slot whose holder stopped renewing is free after this (a node that died mid-drain); renewed every third of it.",
        }),
      }),
    ),
    {
      description:
        "A cluster-wide cap on nodes draining at once (kured's concurrency): a drain waits for one of `limit` coordination.k8s.io Leases, until its deadline. Absent: no cap (and no Lease is read or written).",
      defaultText: "no cap",
    },
  ),
  dryRun: documented(z._default(z.boolean(), false), {
    description:
      "Change nothing: write the records and Node Events saying what would be done (taint, cordon, the pods a drain would evict and leave), and leave the approval to the rules.",
  }),
  drainLeadMs: msSetting(
    kubernetesDefaults.drainLeadMs,
    "The drain starts this long before `NotBefore` (at once when that is past); the taint and cordon come at the notice.",
    nonNegativeMs,
  ),
  deadlineReserveMs: msSetting(
    kubernetesDefaults.deadlineReserveMs,
    "The drain's deadline is `NotBefore` minus this.",
    nonNegativeMs,
  ),
  pdbRetryInitialMs: msSetting(
    kubernetesDefaults.pdbRetryInitialMs,
    "First wait after a PodDisruptionBudget refused an eviction (429); doubles each time.",
  ),
  pdbRetryMaxMs: msSetting(
    kubernetesDefaults.pdbRetryMaxMs,
    "Longest wait between retries of a refused or failed eviction, and the longest a throttled eviction (429 without a disruption budget) waits whatever its Retry-After (at least 1 s).",
  ),
  evictEmptyDir: documented(z._default(z.boolean(), true), {
    description:
      "Evict pods with emptyDir volumes (their data is lost, as with `kubectl drain --delete-emptydir-data`).",
  }),
  force: documented(z._default(z.boolean(), false), {
    description:
      "Evict pods without a controller too (no ownerReference with `controller: true`), as `kubectl drain --force`: nothing recreates them. Off: they stay, and the drain ends `DrainIncomplete` naming them (no drain-then-approve).",
  }),
  noExecuteTaintAfterDrain: documented(z._default(z.boolean(), false), {
    description:
      "After a complete drain, also taint NoExecute (never before: it would evict without PodDisruptionBudgets).",
  }),
  kubeconfig: documented(z.optional(z.string().check(z.minLength(1))), {
    description: "Kubeconfig file (tests, an agent outside the cluster).",
    defaultText: "in-cluster: the service-account token and CA, `KUBERNETES_SERVICE_HOST`/`PORT`",
  }),
  inClusterPathPrefix: documented(z._default(z.string(), ""), {
    description:
      "Prefix of the service-account directory (`<prefix>/var/run/secrets/kubernetes.io/serviceaccount`) read for in-cluster credentials; for tests and unusual mounts.",
  }),
  requestTimeoutMs: msSetting(
    kubernetesDefaults.requestTimeoutMs,
    "Deadline of each Kubernetes API request, credentials included (an exec plugin still running then is stopped).",
  ),
  podPollMs: msSetting(
    kubernetesDefaults.podPollMs,
    "How often the pods left are listed while evicted pods terminate.",
  ),
});
export type KubernetesSettings = z.infer<typeof kubernetesSettingsSchema>;

/** The policy for an EventType (case-insensitive; unknown types use `other`). */
export function policyFor(settings: Pick<KubernetesSettings, "policy">, eventType: string): NodePolicy {
  const known = knownEventTypes.find((t) => t.toLowerCase() === eventType.toLowerCase());
  return settings.policy[known ?? "other"];
}

/** What a drain does at its deadline for an EventType (case-insensitive; unknown types use `other`). */
export function deadlineActionFor(settings: Pick<KubernetesSettings, "atDeadline">, eventType: string): DeadlineAction {
  const known = knownEventTypes.find((t) => t.toLowerCase() === eventType.toLowerCase());
  return settings.atDeadline[known ?? "other"];
}

/** Whether a policy includes the step: each policy does everything the ones before it do. */
export function policyIncludes(policy: NodePolicy, step: Exclude<NodePolicy, "none">): boolean {
  return nodePolicies.indexOf(policy) >= nodePolicies.indexOf(step);
}
