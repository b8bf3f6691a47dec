// Collect stage: owns the collector state and turns each fetched document into transition records (pure logic in
// collector/transitions.ts). A failed poll is an observation gap. The new state is adopted only once committed.
import type { CollectorState } from "../collector/state.js";
import { applyDocument, applyPollFailure, resumeAfterRestart, type CollectContext, type CollectResult } from "../collector/transitions.js";
import type { ScheduledEventsDocument } from "../imds/document.js";

export class CollectStage {
  private current: CollectorState;
  /** Whether the store held a state from an earlier run. */
  readonly resumed: boolean;

  constructor(loaded: CollectorState) {
    this.resumed = loaded.lastSuccessMs !== null;
    this.current = this.resumed ? resumeAfterRestart(loaded) : loaded;
  }

  get state(): Readonly<CollectorState> {
    return this.current;
  }

  /** The records a document implies and the state after it; call `adopt` once they are durable. */
  collect(document: ScheduledEventsDocument, context: CollectContext): CollectResult {
    return applyDocument(this.current, document, context);
  }

  adopt(state: CollectorState): void {
    this.current = state;
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
