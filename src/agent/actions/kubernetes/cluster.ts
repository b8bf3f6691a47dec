// Events that name several VMs (pure): which of the named VMs are nodes of this cluster (matched through the Node's
// providerID and the VM name IMDS lists), which node's agent approves (the first of them in Resources), and what a
// node does with the event's approval once its own steps are over: approve, leave it to the rules, wait for the other
// nodes to drain, or decline. Plain values in and out; the node reads are node-action.ts's.
import type { HoldVerdict } from "../action-ledger.js";
import { azureProviderScheme } from "./plan.js";
import { policyIncludes, type NodePolicy } from "./settings.js";

const uniformPattern = /\/virtualMachineScaleSets\/([^/]+)\/virtualMachines\/([^/]+)\/?$/i;
const vmPattern = /\/providers\/Microsoft\.Compute\/virtualMachines\/([^/]+)\/?$/i;

/**
 * The VM name (as IMDS lists it in Resources and serves it as compute.name) of an Azure Node's providerID: a VMSS
 * Uniform instance `…/virtualMachineScaleSets/<scaleSet>/virtualMachines/<instanceId>` is `<scaleSet>_<instanceId>`;
 * a VMSS Flex or standalone VM `…/virtualMachines/<name>` is `<name>`. Undefined for anything else.
 */
export function vmNameOfProviderID(providerID: string): string | undefined {
  if (!providerID.toLowerCase().startsWith(azureProviderScheme)) return undefined;
  const uniform = uniformPattern.exec(providerID);
  if (uniform) return `${uniform[1]}_${uniform[2]}`;
  return vmPattern.exec(providerID)?.[1];
}

/** A named VM that is a node of this cluster. */
export interface NamedNode {
  vmName: string;
  node: string;
}

/** The event's VMs split by whether they are nodes of this cluster. */
export interface NamedNodes {
  /** Named VMs that are nodes of this cluster, in the order of Resources (the first approves). */
  nodes: NamedNode[];
  /** Named VMs with no node in this cluster (they do not hold the approval up). */
  outside: string[];
}

/** Which of the event's VMs (`resources`) are nodes of the cluster (`clusterNodes`), case-insensitively. */
export function namedNodes(
  resources: readonly string[],
  clusterNodes: ReadonlyArray<{ name: string; providerID: string }>,
): NamedNodes {
  const byVm = new Map<string, string>();
  for (const node of clusterNodes) {
    const vmName = vmNameOfProviderID(node.providerID);
    if (vmName !== undefined && !byVm.has(vmName.toLowerCase())) byVm.set(vmName.toLowerCase(), node.name);
  }
  const nodes: NamedNode[] = [];
  const outside: string[] = [];
  const seen = new Set<string>();
  for (const vmName of resources) {
    const key = vmName.toLowerCase();
    if (seen.has(key)) continue;
    seen.add(key);
    const node = byVm.get(key);
    if (node === undefined) outside.push(vmName);
    else nodes.push({ vmName, node });
  }
  return { nodes, outside };
}

/** What a node does with the event's approval once its own steps are over. */
export type SettleStep = { release: HoldVerdict; reason: string } | { waitFor: string[] };

export interface SettleInput {
  policy: NodePolicy;
  /** This node's drain is complete. */
  drained: boolean;
  thisNode: string;
  /** The event's VMs in this cluster; undefined when the event names only this VM. */
  named: NamedNodes | undefined;
}

/** Why an incomplete drain holds the approval until NotBefore (the Approval record's Detail says it). */
export const incompleteReason =
  "this node's drain is incomplete (pods left, named in its DrainIncomplete record): the event is not approved before NotBefore";

/** Why a complete drain asks for the approval (the Approval record's Detail ends with it). */
export const drainedReason = "the node is drained (kubernetes policy drain-then-approve)";

const list = (nodes: readonly string[]): string => nodes.join(", ");

/**
 * The elected node (the first of the event's VMs that is a node of this cluster) approves, once every named node has
 * drained; every other node declines, so that the event is approved by exactly one agent. An event naming only this
 * VM (or no other node of the cluster) is approved after this node's complete drain under drain-then-approve, and
 * left to the approval rules otherwise; an incomplete drain declines, so nothing starts the event before NotBefore.
 */
export function settleStep({ policy, drained, thisNode, named }: SettleInput): SettleStep {
  const nodes = named?.nodes.map((n) => n.node) ?? [thisNode];
  if (!nodes.includes(thisNode)) {
    return {
      release: "decline",
      reason: `this node (${thisNode}) is not among the nodes the event names; it leaves the approval to them`,
    };
  }
  const elected = nodes[0]!;
  if (elected !== thisNode) {
    return {
      release: "decline",
      reason: `the event names ${nodes.length} nodes of this cluster (${list(nodes)}): ${elected} approves it once all have drained`,
    };
  }
  const others = nodes.filter((n) => n !== thisNode);
  if (!policyIncludes(policy, "drain")) return { release: "done", reason: "" };
  // Pods left for any reason (named in the DrainIncomplete record): nothing approves early, single node or wave alike.
  if (!drained) return { release: "decline", reason: incompleteReason };
  if (others.length > 0) return { waitFor: others };
  const outside =
    named !== undefined && named.outside.length > 0
      ? `; outside this cluster, not waited for: ${list(named.outside)}`
      : "";
  return policy === "drain-then-approve"
    ? { release: "approve", reason: `${drainedReason}${outside}` }
    : { release: "done", reason: "" };
}

/** What the elected node does while it waits for the others: go on waiting, release the approval, or give up at the deadline. */
export type WaitStep = { waitingFor: string[] } | { release: HoldVerdict; reason: string };

/**
 * The elected node's wait: released (`approve` under drain-then-approve, else `done` for the rules) once no named node
 * is left undrained; `decline` once the deadline has passed with nodes still draining (the event starts at NotBefore).
 */
export function waitStep(
  policy: NodePolicy,
  allNodes: readonly string[],
  undrained: readonly string[],
  nowMs: number,
  deadlineMs: number,
): WaitStep {
  if (undrained.length === 0) {
    const reason = `every node the event names has drained (${allNodes.length} of ${allNodes.length}: ${list(allNodes)})`;
    return { release: policy === "drain-then-approve" ? "approve" : "done", reason };
  }
  if (nowMs >= deadlineMs)
    return {
      release: "decline",
      reason: `not every node had drained by the deadline: ${waitingText(allNodes, undrained)}; the event starts at NotBefore`,
    };
  return { waitingFor: [...undrained] };
}

/** "waiting for 2 of 3 nodes: b, c". */
export function waitingText(allNodes: readonly string[], undrained: readonly string[]): string {
  return `waiting for ${undrained.length} of ${allNodes.length} nodes: ${list(undrained)}`;
}
