// Reconciliation of this VM's Node with IMDS (I/O): after the first document read and whenever the EventIds a document
// lists change, sef's marks on the Node whose event is no longer listed — and that no node action still owns — are
// taken off (an empty data directory, a reimage, a crash between two steps), with the records and Node Events of an
// undo. A failed attempt is tried again after a pause; nothing is done from a failed poll (no document, no call).
import { retryDelayMs, type RetryPolicy } from "@sef/retry/policy.js";
import type { Logger } from "pino";
import type { KubernetesRecord } from "@sef/contract/record.js";
import type { Clock } from "../../util/clock.js";
import type { KubernetesMetrics } from "./metrics.js";
import { eventMatchKey, orphanedMark, type SefMark } from "./marks.js";
import type { NodeIo, UndoReport } from "./node-io.js";
import { nodeIsThisVm } from "./plan.js";

export interface ReconcilerOptions {
  io: NodeIo;
  vmResourceId: () => string;
  /** The EventIds whose node actions are still going on (they take their own marks off). */
  ownedEventIds: () => string[];
  /** Commits the undo's records (durably, in the outbox). */
  commit: (records: KubernetesRecord[]) => void;
  clock: Clock;
  logger: Logger;
  metrics: KubernetesMetrics;
  /** The waits after failed attempts (sef's one backoff formula). */
  retryPolicy: RetryPolicy;
  /** The jitter of those waits, in [0, 1) (default Math.random). */
  random?: () => number;
}

/** Why a reconciled mark was taken off (the records' Detail.reason). */
export const reconciledReason = "the event is no longer in the IMDS document (reconciled with the Node)";

export class NodeReconciler {
  private listed: readonly string[] | undefined;
  private reconciledKey: string | undefined;
  private retryAtMs = 0;
  /** Failed attempts in a row (the first and every 12th is logged at warn). */
  private failures = 0;

  constructor(private readonly options: ReconcilerOptions) {}

  /** A document was read: its EventIds. Returns true when they differ from the last reconciled (the worker wakes). */
  documentRead(eventIds: readonly string[]): boolean {
    const changed = this.listed === undefined || keyOf(eventIds) !== keyOf(this.listed);
    this.listed = eventIds;
    return changed;
  }

  /**
   * Reconciles when the events listed, or those node actions own, changed since the last reconciliation (the first
   * time after the first document read); returns how long until it wants to be looked at again.
   */
  async reconcileIfDue(idleMs: number): Promise<number> {
    const listed = this.listed;
    if (listed === undefined) return idleMs;
    const key = `${keyOf(listed)}|${keyOf(this.options.ownedEventIds())}`;
    if (key === this.reconciledKey) return idleMs;
    const { clock, logger, metrics, retryPolicy } = this.options;
    const waitMs = this.retryAtMs - clock.monotonicMs();
    if (waitMs > 0) return waitMs;
    try {
      await this.reconcile(listed);
      this.reconciledKey = key;
      this.retryAtMs = 0;
      this.failures = 0;
      return idleMs;
    } catch (err) {
      metrics.apiErrors.inc();
      this.failures += 1;
      const log = this.failures % 12 === 1 ? logger.warn.bind(logger) : logger.debug.bind(logger);
      log({ err, failures: this.failures }, "could not reconcile the node with IMDS; trying again");
      const retryMs = retryDelayMs(retryPolicy, this.failures, undefined, this.options.random?.() ?? Math.random());
      this.retryAtMs = clock.monotonicMs() + retryMs;
      return retryMs;
    }
  }

  private async reconcile(listed: readonly string[]): Promise<void> {
    const { io, logger } = this.options;
    const node = await io.readNode();
    if (!nodeIsThisVm(node.providerID, this.options.vmResourceId())) {
      logger.warn(
        { node: node.name, providerID: node.providerID },
        "NODE_NAME names another VM's node: its marks are not reconciled with this VM's events",
      );
      return;
    }
    const { decision, records } = await io.undo(node, orphanedMark(listed, this.options.ownedEventIds()), reportOf);
    if (decision.undone.length === 0) return;
    this.options.commit(records);
    for (const record of records) this.options.metrics.steps.inc({ outcome: record.Outcome });
    logger.info(
      { events: decision.undone.map((m) => m.eventId), uncordoned: decision.uncordon },
      "took sef's marks of events IMDS no longer lists off the node",
    );
  }
}

/** A reconciled mark's record: its EventType from the mark, Completed (the document no longer says how it ended). */
function reportOf(mark: SefMark): UndoReport | undefined {
  if (mark.eventId === "") return undefined;
  return {
    event: { EventId: mark.eventId, EventType: mark.eventType || "Unknown" },
    ended: "Completed",
    detail: { policy: mark.policy, reason: reconciledReason },
  };
}

const keyOf = (eventIds: readonly string[]): string => eventIds.map(eventMatchKey).sort().join(",");
