// The kubernetes action's writes to its Node and what they leave behind (I/O): guarded patches, Kubernetes Events for
// people, Kubernetes records, and the undo of sef's marks (one patch, an Event and a record per event taken off),
// shared by a node action's own undo and the reconciliation with IMDS.
import type { Logger } from "pino";
import type { EventStatus, KubernetesOutcome, KubernetesRecord, RecordIdentity } from "@sef/contract/record.js";
import type { Clock } from "@sef/runtime/clock.js";
import { KubeApiError, type KubeApi, type NodeEventType } from "./client.js";
import type { KubernetesMetrics } from "./metrics.js";
import { undoMarks, type SefMark, type UndoDecision } from "./marks.js";
import type { NodePatch } from "./plan.js";
import { kubernetesRecord, type KubernetesStepDetail } from "./records.js";

export type KubeNode = Awaited<ReturnType<KubeApi["readNode"]>>;

export interface NodeIoOptions {
  nodeName: string;
  api: () => KubeApi;
  vm: () => RecordIdentity;
  clock: Clock;
  logger: Logger;
  metrics: KubernetesMetrics;
  agentVersion: string;
}

/** How one undone mark is reported: the event it was for, how it ended, and the Detail fields beside node and outcome. */
export interface UndoReport {
  event: { EventId: string; EventType: string };
  ended: EventStatus;
  detail: Omit<KubernetesStepDetail, "node">;
}

export class NodeIo {
  constructor(private readonly options: NodeIoOptions) {}

  get nodeName(): string {
    return this.options.nodeName;
  }

  readNode(): Promise<KubeNode> {
    return this.options.api().readNode(this.options.nodeName);
  }

  /** A merge patch guarded by the resourceVersion read: a 409 says the node changed meanwhile, and the step is taken again. */
  async patch(patch: NodePatch, resourceVersion: string): Promise<void> {
    try {
      await this.options.api().patchNode(this.options.nodeName, patch, resourceVersion);
    } catch (err) {
      if (!(err instanceof KubeApiError && err.status === 409)) throw err;
      throw new KubeApiError(409, "the node changed while sef patched it (409 Conflict); the step is taken again");
    }
  }

  /** Kubernetes Events are for people: one that cannot be written is logged, and the step goes on. */
  async nodeEvent(
    node: { name: string; uid: string },
    reason: string,
    message: string,
    type: NodeEventType,
  ): Promise<void> {
    try {
      await this.options.api().nodeEvent(node, reason, message.slice(0, 1000), type);
    } catch (err) {
      this.options.metrics.apiErrors.inc();
      this.options.logger.warn({ err, reason }, "could not write a Kubernetes Event on the node");
    }
  }

  record(
    event: { EventId: string; EventType: string },
    eventStatus: EventStatus,
    outcome: KubernetesOutcome,
    detail: Omit<KubernetesStepDetail, "node">,
    elapsedMs: number,
    httpStatus?: number,
    attempt?: number,
  ): KubernetesRecord {
    const { clock, agentVersion } = this.options;
    return kubernetesRecord({
      vm: this.options.vm(),
      event,
      eventStatus,
      outcome,
      detail: { node: this.options.nodeName, ...detail },
      elapsedMs,
      ...(httpStatus !== undefined ? { httpStatus } : {}),
      ...(attempt !== undefined ? { attempt } : {}),
      nowMs: clock.now(),
      agentVersion,
    });
  }

  /**
   * Takes the marks `pick` chooses off the node in one guarded patch (see marks.ts `undoMarks`), writes a Node Event
   * per event taken off, and returns the decision and a record per event (`report` says how; a mark of no known event
   * gets no record). Nothing is patched when none of them is on the node.
   */
  async undo(
    node: KubeNode,
    pick: (mark: SefMark) => boolean,
    report: (mark: SefMark) => UndoReport | undefined,
  ): Promise<{ decision: UndoDecision; records: KubernetesRecord[] }> {
    const startedMs = this.options.clock.monotonicMs();
    const decision = undoMarks(node, pick);
    if (decision.patch === undefined) return { decision, records: [] };
    await this.patch(decision.patch, node.resourceVersion);
    const outcome: KubernetesOutcome = decision.uncordon ? "Uncordoned" : "Released";
    const what = decision.uncordon
      ? "uncordoned and untainted"
      : decision.keptCordonedBecause !== undefined
        ? `untainted; stays cordoned: ${decision.keptCordonedBecause}`
        : "untainted";
    const records: KubernetesRecord[] = [];
    for (const mark of decision.undone) {
      const how = report(mark);
      if (how === undefined) {
        this.options.logger.info(
          { node: node.name, keys: mark.annotationKeys },
          "took off a mark sef left without an event (the previous release's cordon flag)",
        );
        continue;
      }
      const { event, ended, detail } = how;
      await this.nodeEvent(
        node,
        decision.uncordon ? "ScheduledEventUncordoned" : "ScheduledEventReleased",
        `${event.EventType} ${event.EventId} ${ended}: ${what} by sef`,
        "Normal",
      );
      const kept = decision.keptCordonedBecause !== undefined ? { keptCordoned: decision.keptCordonedBecause } : {};
      records.push(
        this.record(event, ended, outcome, { ...detail, ...kept }, this.options.clock.monotonicMs() - startedMs),
      );
    }
    return { decision, records };
  }
}
