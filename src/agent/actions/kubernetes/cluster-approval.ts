// The approval of an event once this node's own steps are over (I/O around cluster.ts): for an event naming several
// VMs, the cluster's Nodes listed once; where another node approves, a decline naming it; where this node approves, a
// wait reading the other named nodes' marks until all drained (or the deadline), then the hold released with the
// verdict. Records and Node Events say who approves and what it waits for.
import type { Logger } from "pino";
import type { KubernetesRecord, TransitionRecord } from "@sef/contract/record.js";
import type { ActionRow, HoldVerdict } from "../action-ledger.js";
import type { Clock } from "@sef/runtime/clock.js";
import { KubeApiError, type KubeApi } from "./client.js";
import { namedNodes, settleStep, waitingText, waitStep, type NamedNodes } from "./cluster.js";
import { markOf } from "./marks.js";
import type { NodeIo } from "./node-io.js";
import type { NodeActionState } from "./node-state.js";
import type { NodePolicy } from "./settings.js";

/** What the node action lends the approval steps: its Node I/O, and its persisted state and hold. */
export interface ApprovalStepsHost {
  readonly io: NodeIo;
  readonly api: () => KubeApi;
  readonly clock: Clock;
  readonly logger: Logger;
  /** How often the named nodes are read while waiting. */
  readonly podPollMs: number;
  readonly deadlineMs: (record: TransitionRecord, state: NodeActionState) => number;
  /** Commits the step's record with the node action's new state. */
  commitStep(row: ActionRow, next: NodeActionState, record: KubernetesRecord): void;
  saveState(row: ActionRow, state: NodeActionState): void;
  /** Releases the node action's hold with the verdict (its phase becomes settled); returns the wait until it looks again. */
  release(row: ActionRow, state: NodeActionState, verdict: HoldVerdict, reason: string): number;
}

export class ClusterApproval {
  constructor(private readonly host: ApprovalStepsHost) {}

  /**
   * After the node steps, the approval (cluster.ts `settleStep`): an event naming only this VM is approved after a
   * complete drain-then-approve drain, else left to the rules; one naming several nodes of this cluster is approved by
   * the first of them once all have drained (it waits), and declined by the others.
   */
  async settle(row: ActionRow, record: TransitionRecord, state: NodeActionState, policy: NodePolicy): Promise<number> {
    const { logger } = this.host;
    const nodeName = this.host.io.nodeName;
    let named = state.named;
    if (named === undefined && record.Resources.length > 1) {
      if (this.host.clock.now() >= this.host.deadlineMs(record, state))
        return this.host.release(
          row,
          state,
          "decline",
          "the nodes the event names could not be listed before the deadline; the event starts at NotBefore",
        );
      named = namedNodes(record.Resources, await this.host.api().listNodes(""));
      state = { ...state, named };
      this.host.saveState(row, state);
    }
    const step = settleStep({ policy, drained: state.phase === "drained", thisNode: nodeName, named });
    if ("waitFor" in step) return this.startWaiting(row, record, state, policy, step.waitFor);
    if (named !== undefined && named.nodes.length > 1) await this.announceApprover(row, record, state, policy, named);
    if (step.release !== "approve" && policy === "drain-then-approve")
      logger.info(
        { eventId: record.EventId, verdict: step.release, why: step.reason },
        "not approving after the drain",
      );
    return this.host.release(row, state, step.release, step.reason);
  }

  /** A node that does not approve a multi-node event says which one does (a Waiting record and a Node Event). */
  private async announceApprover(
    row: ActionRow,
    record: TransitionRecord,
    state: NodeActionState,
    policy: NodePolicy,
    named: NamedNodes,
  ): Promise<void> {
    const approver = named.nodes[0]!.node;
    if (approver === this.host.io.nodeName) return;
    const nodes = named.nodes.map((n) => n.node);
    const node = await this.host.io.readNode();
    await this.host.io.nodeEvent(
      node,
      "ScheduledEventWaiting",
      `${record.EventType} ${record.EventId} names ${nodes.length} nodes of this cluster: ${approver} approves it once all have drained`,
      "Normal",
    );
    const detail = {
      policy,
      nodesNamed: nodes,
      ...(named.outside.length > 0 ? { outsideCluster: named.outside } : {}),
      approver,
    };
    this.host.commitStep(row, state, this.host.io.record(record, "Scheduled", "Waiting", detail, 0));
  }

  /** The approving node of a multi-node event starts waiting for the other named nodes to drain. */
  private async startWaiting(
    row: ActionRow,
    record: TransitionRecord,
    state: NodeActionState,
    policy: NodePolicy,
    others: string[],
  ): Promise<number> {
    const undrained = await this.undrained(others, record.EventId);
    const next: NodeActionState = { ...state, phase: "waiting", waitingFor: undrained };
    if (undrained.length === 0) return this.wait(row, record, next, policy);
    const named = state.named!;
    const nodes = named.nodes.map((n) => n.node);
    const node = await this.host.io.readNode();
    const text = waitingText(nodes, undrained);
    await this.host.io.nodeEvent(
      node,
      "ScheduledEventWaiting",
      `${record.EventType} ${record.EventId}: ${text}; this node approves it once all have drained`,
      "Normal",
    );
    const detail = {
      policy,
      nodesNamed: nodes,
      ...(named.outside.length > 0 ? { outsideCluster: named.outside } : {}),
      approver: this.host.io.nodeName,
      waitingFor: undrained,
    };
    this.host.commitStep(row, next, this.host.io.record(record, "Scheduled", "Waiting", detail, 0));
    this.host.logger.info({ eventId: record.EventId, waitingFor: undrained }, text);
    return 0;
  }

  /** The approving node's wait for the other named nodes (cluster.ts `waitStep`): released once all drained, declined at the deadline. */
  async wait(row: ActionRow, record: TransitionRecord, state: NodeActionState, policy: NodePolicy): Promise<number> {
    const { clock, podPollMs } = this.host;
    // A waiting state names its nodes and those it waits for (startWaiting writes both).
    const nodes = state.named!.nodes.map((n) => n.node);
    const undrained = await this.undrained(state.waitingFor!, record.EventId);
    const deadlineMs = this.host.deadlineMs(record, state);
    const step = waitStep(policy, nodes, undrained, clock.now(), deadlineMs);
    if ("waitingFor" in step) {
      if (step.waitingFor.length !== state.waitingFor!.length)
        this.host.saveState(row, { ...state, waitingFor: step.waitingFor });
      return Math.max(50, Math.min(podPollMs, deadlineMs - clock.now()));
    }
    if (step.release === "decline") await this.notApproved(row, record, state, policy, nodes, undrained, step.reason);
    else {
      const node = await this.host.io.readNode();
      await this.host.io.nodeEvent(
        node,
        "ScheduledEventNodesDrained",
        `${record.EventType} ${record.EventId}: ${step.reason}`,
        "Normal",
      );
    }
    return this.host.release(row, { ...state, waitingFor: undrained }, step.release, step.reason);
  }

  /** The wait ended at the deadline with nodes still draining: a NotApproved record and a Warning Event. */
  private async notApproved(
    row: ActionRow,
    record: TransitionRecord,
    state: NodeActionState,
    policy: NodePolicy,
    nodes: string[],
    undrained: string[],
    reason: string,
  ): Promise<void> {
    const node = await this.host.io.readNode();
    await this.host.io.nodeEvent(
      node,
      "ScheduledEventNotApproved",
      `${record.EventType} ${record.EventId}: ${reason}`,
      "Warning",
    );
    this.host.logger.warn({ eventId: record.EventId, waitingFor: undrained }, reason);
    this.host.commitStep(
      row,
      state,
      this.host.io.record(
        record,
        "Scheduled",
        "NotApproved",
        { policy, nodesNamed: nodes, approver: this.host.io.nodeName, waitingFor: undrained, reason },
        0,
      ),
    );
  }

  /** The nodes among `nodes` whose mark does not say they drained for the event (a node gone from the cluster holds nothing). */
  private async undrained(nodes: readonly string[], eventId: string): Promise<string[]> {
    const left: string[] = [];
    for (const name of nodes) {
      try {
        const node = await this.host.api().readNode(name);
        if (!markOf(node, eventId)?.drainedAt) left.push(name);
      } catch (err) {
        if (!(err instanceof KubeApiError && err.status === 404)) throw err;
      }
    }
    return left;
  }
}
