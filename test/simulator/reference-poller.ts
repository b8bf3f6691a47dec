// Test helper: a reference agent that applies the record contract's transition rules to a stream of polls, so each
// scenario's `expect` list can be checked against the contract, both on the pure timeline and over real HTTP.
import type { ExpectedRecord, Scenario } from "../../src/testbed/simulator/scenario-schema.js";
import { Timeline } from "../../src/testbed/simulator/timeline.js";

interface Known {
  status: "Scheduled" | "Started";
  notBeforeMs: number | null;
  resources: string[];
}

export interface PolledEvent {
  EventId: string;
  EventStatus: "Scheduled" | "Started";
  Resources: string[];
  notBeforeMs: number | null;
}

/** Continuous-polling agent without approvals: feed it every poll outcome in order. */
export class ReferenceAgent {
  readonly records: ExpectedRecord[] = [];
  private readonly known = new Map<string, Known>();
  private lastIncarnation: number | null = null;
  private gap = false;

  constructor(private readonly vmName: string) {}

  failedPoll(): void {
    this.gap = true;
  }

  document(incarnation: number, events: readonly PolledEvent[], nowMs: number): void {
    const affects = (resources: string[]): boolean =>
      resources.some((r) => r.toLowerCase() === this.vmName.toLowerCase());
    if (incarnation !== this.lastIncarnation) {
      this.lastIncarnation = incarnation;
      const present = new Set<string>();
      for (const event of events) {
        present.add(event.EventId);
        const before = this.known.get(event.EventId);
        if (before?.status !== event.EventStatus) {
          this.records.push({
            EventId: event.EventId,
            EventStatus: event.EventStatus,
            PreviousStatus: before?.status ?? "",
            AffectsThisVm: affects(event.Resources),
            ObservationGap: this.gap,
          });
        }
        this.known.set(event.EventId, {
          status: event.EventStatus,
          notBeforeMs: event.notBeforeMs,
          resources: event.Resources,
        });
      }
      for (const [id, before] of this.known) {
        if (present.has(id)) continue;
        this.known.delete(id);
        const ranUnseen =
          before.status === "Scheduled" && this.gap && before.notBeforeMs !== null && before.notBeforeMs <= nowMs;
        this.records.push({
          EventId: id,
          EventStatus: before.status === "Started" || ranUnseen ? "Completed" : "Canceled",
          PreviousStatus: before.status,
          AffectsThisVm: affects(before.resources),
          ObservationGap: this.gap,
        });
      }
    }
    this.gap = false;
  }
}

/** Records a continuously polling agent emits for `vmName`, polling the pure timeline every `pollIntervalMs` of wall time. */
export function referenceRecords(
  scenario: Scenario,
  options: { pollIntervalMs: number; vmName?: string; speed?: number },
): ExpectedRecord[] {
  const agent = new ReferenceAgent(options.vmName ?? scenario.vm.name);
  const timeline = new Timeline(scenario, { speed: options.speed });
  const startMs = 1_700_000_000_000;
  timeline.start(startMs);
  const endMs = startMs + timeline.wallMs(scenario.durationSeconds) + 2 * options.pollIntervalMs;
  for (let nowMs = startMs; nowMs <= endMs; nowMs += options.pollIntervalMs) {
    const fault = timeline.takeFault(nowMs);
    if (fault && fault.kind !== "malformed-event") {
      agent.failedPoll();
      continue;
    }
    const { incarnation, events } = timeline.snapshot();
    agent.document(incarnation, events, nowMs);
  }
  return agent.records;
}

export const sortRecords = (records: readonly ExpectedRecord[]): string[] =>
  records.map((r) => JSON.stringify(r)).sort();
