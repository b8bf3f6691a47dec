// One node action's state as the action ledger keeps it for an event: its phase, the drain's progress and what holds
// it. Read by the worker (node-action.ts) and the multi-node approval (cluster-approval.ts).
import type { DrainProgress } from "./drain.js";
import type { NamedNodes } from "./cluster.js";

/**
 * planned → marking → marked → draining → drained | incomplete → [waiting: an event naming several nodes, on the node
 * that approves it] → settled; undoing → done once the event is over.
 */
export type NodePhase =
  "planned" | "marking" | "marked" | "draining" | "drained" | "incomplete" | "waiting" | "settled" | "undoing" | "done";

export interface NodeActionState {
  phase: NodePhase;
  /** Written by the previous release (before the Node's marks said it); no longer read. */
  cordonedBySef?: boolean;
  drainStartedAtMs: number | null;
  drain: DrainProgress;
  podsLeft: string[];
  /** How the event ended (from its Completed or Canceled transition), for the undo's record. */
  endedStatus: "Completed" | "Canceled" | null;
  /** API failures in a row of the current step (the first one is recorded). */
  failures: number;
  /** An event naming several VMs: which of them are nodes of this cluster (listed once, at the settle). */
  named?: NamedNodes;
  /** Waiting: the named nodes not seen drained yet. */
  waitingFor?: string[];
  /** The drain waits for a slot of the cluster-wide cap (its Waiting record is written). */
  waitingForSlot?: boolean;
}

export const initialNodeState = (): NodeActionState => ({
  phase: "planned",
  drainStartedAtMs: null,
  drain: { evicted: [], pdbBlocked: [], pdbHeldMs: 0 },
  podsLeft: [],
  endedStatus: null,
  failures: 0,
});
