// Collect stage: owns the collector state and ingests each fetched document: the emitted keys of EventIds the collector
// does not track are recalled from the store, the pure collector (collector/transitions.ts) turns the document into
// transition records, the commit stage makes the new state and the records durable together, and only then is the new
// state adopted, keeping in memory the emitted keys of tracked events only. A failed poll is an observation gap.
import type { Logger } from "pino";
import type { AgentConfig } from "../config/schema.js";
import type { RecordIdentity } from "@sef/contract/record.js";
import type { CollectorState, EmittedKey } from "../collector/state.js";
import {
  applyDocument,
  applyPollFailure,
  emittedToRecall,
  resumeAfterRestart,
  type EmittedToRecall,
} from "../collector/transitions.js";
import type { ScheduledEventsDocument } from "../imds/document.js";
import type { AgentMetrics } from "../observability/metrics.js";
import type { CommitStage } from "./commit-stage.js";
import { listedEventIds, type DocumentsRead } from "./documents-read.js";

export interface CollectStageOptions {
  config: Pick<AgentConfig, "gapThresholdMs" | "pollIntervalMs" | "emittedRetentionMs">;
  commit: CommitStage;
  /** The identity records carry (VM and AgentId), read at each document. */
  vm: () => RecordIdentity;
  agentVersion: string;
  metrics: AgentMetrics;
  logger: Logger;
  /** Reads emitted keys back from the store (collector/state-tables.ts): memory holds those of tracked events only. */
  recallEmitted: (wanted: EmittedToRecall) => Iterable<readonly [string, EmittedKey]>;
  /** Told the EventIds of each document adopted (after its records committed); never of a failed poll. */
  documentsRead?: DocumentsRead;
}

export class CollectStage {
  private current: CollectorState;
  /** The last document ingested and committed: the IMDS client hands the same object back while nothing changed. */
  private lastDocument: ScheduledEventsDocument | undefined;
  /** Whether the store held a state from an earlier run. */
  readonly resumed: boolean;

  constructor(
    loaded: CollectorState,
    private readonly options: CollectStageOptions,
  ) {
    this.resumed = loaded.lastSuccessMs !== null;
    this.current = this.resumed ? resumeAfterRestart(loaded) : loaded;
  }

  get state(): Readonly<CollectorState> {
    return this.current;
  }

  /**
   * Collect → commit → adopt for one document fetched at wall time `nowMs` (`clockStepMs`: the wall-clock step noticed
   * since the last good poll). Returns whether it changed anything; throws (state unchanged) when the commit fails.
   */
  ingest(document: ScheduledEventsDocument, nowMs: number, clockStepMs: number): boolean {
    // The same document as last time (a 304, or the same body): nothing to compare, nothing to write.
    const changed = document === this.lastDocument ? this.unchanged(nowMs) : this.adopt(document, nowMs, clockStepMs);
    // Then the followers hear which events it lists (a document with an unreadable EventId is not told).
    const { documentsRead } = this.options;
    const eventIds = documentsRead && listedEventIds(document);
    if (eventIds) documentsRead?.announce(eventIds);
    return changed;
  }

  /** A new document: its transitions committed with the collector's next state, which is then adopted. */
  private adopt(document: ScheduledEventsDocument, nowMs: number, clockStepMs: number): boolean {
    const { config, commit, metrics, logger, agentVersion } = this.options;
    const gapThresholdMs = config.gapThresholdMs ?? Math.max(5 * config.pollIntervalMs, 10_000);
    this.recall(document);
    const result = applyDocument(this.current, document, {
      nowMs,
      vm: this.options.vm(),
      agentVersion,
      // The collector measures gaps on wall time: after a step back, shorten the threshold by the step so a real
      // gap is still seen. A step forward is left as it is: it may be a VM pause catching up, worth flagging.
      gapThresholdMs: gapThresholdMs + Math.min(0, clockStepMs),
      emittedRetentionMs: config.emittedRetentionMs,
    });
    // An unchanged document changes nothing worth a disk write: keep the hot path free of fsyncs.
    const entries = result.changed
      ? commit.commitDocument(result.state, [...result.records, ...result.malformed], nowMs)
      : [];
    // Durable: the document's emitted keys join the shared map (its earlier states become stale; unchanged
    // documents' pruning waits in the view for the next commit), and memory keeps those of tracked events only.
    if (result.changed) {
      result.state.emitted.settle();
      result.state.emitted.keepOnlyEvents(result.state.events);
    }
    for (const m of result.malformed) {
      metrics.malformedEvents.inc({ reason: m.Outcome });
      logger.warn(
        { eventId: m.EventId, reason: m.Outcome, detail: m.Detail },
        "IMDS listed an event that cannot be read; forwarded as a MalformedEvent record",
      );
    }
    this.current = result.state;
    this.lastDocument = document;
    if (entries.length > 0) {
      logger.info(
        {
          records: entries.map(
            (e) =>
              `${(e.record as { EventId?: string }).EventId}:${(e.record as { EventStatus?: string }).EventStatus}`,
          ),
        },
        "transitions recorded",
      );
    }
    return result.changed;
  }

  /** Brings back from the store the emitted keys of the document's EventIds that are not tracked (index lookups). */
  private recall(document: ScheduledEventsDocument): void {
    const wanted = emittedToRecall(this.current, document);
    if (wanted.eventIds.length === 0 && wanted.keys.length === 0) return;
    this.current.emitted.remember(this.options.recallEmitted(wanted));
  }

  /**
   * The document just fetched is the one last adopted (same object): what `applyDocument` would conclude without
   * comparing anything: watched without a gap up to `nowMs`, nothing changed.
   */
  private unchanged(nowMs: number): false {
    this.current = { ...this.current, lastSuccessMs: nowMs, interrupted: false };
    return false;
  }

  /** The agent was blind for a moment (a failed request): the next document is checked for a gap. */
  observationGap(): void {
    this.current = applyPollFailure(this.current);
  }

  /** Known events with this status. */
  eventsWithStatus(status: string): number {
    let n = 0;
    for (const e of this.current.events.values()) if (e.status === status) n += 1;
    return n;
  }
}
