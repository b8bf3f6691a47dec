// What one partition takes in (pure but for its own counters): VMs per event, events per partition, new EventIds per
// reporter and per partition and minute, and TimeGenerated no further ahead than the clock skew allowed. A record past a
// bound is dropped and counted; the fleet's memory and state stay bounded however many records a sender invents.
import { reporterOf, type FleetEvent } from "./fleet-event.js";
import type { FleetTransition } from "./record-input.js";
import { own } from "./safe-dict.js";

export interface PartitionBoundsSettings {
  /** Reporting VMs one fleet event keeps; a record of another VM beyond it is dropped. */
  readonly maxVmsPerEvent: number;
  /** Fleet events one partition keeps (ended ones included, until pruned); a new EventId beyond it is dropped. */
  readonly maxEventsPerPartition: number;
  /** New EventIds one reporter (AgentId, else VmId, else VmName) may open per minute in one partition. */
  readonly newEventsPerReporterPerMinute: number;
  /**
   * New EventIds the whole partition opens per minute; past it, only known reporters (in the partition's state when it
   * was opened, or first seen `reporterKnownAfterMs` ago) open new events. Invented reporters pass the per-reporter
   * rate; this is what bounds them.
   */
  readonly newEventsPerPartitionPerMinute: number;
  /** How long ago a reporter must have been first seen to count as known when the partition's rate is reached. */
  readonly reporterKnownAfterMs: number;
  /** A TimeGenerated further ahead of the fleet's clock than this is read as now. */
  readonly maxClockSkewMs: number;
  /** An event no record has mentioned for this long is pruned, ended or not (a never-ended one would stay forever). */
  readonly retainOpenMs: number;
}

export const defaultPartitionBounds: PartitionBoundsSettings = {
  maxVmsPerEvent: 2000,
  maxEventsPerPartition: 5000,
  newEventsPerReporterPerMinute: 120,
  newEventsPerPartitionPerMinute: 300,
  reporterKnownAfterMs: 3600_000,
  maxClockSkewMs: 5 * 60_000,
  retainOpenMs: 7 * 24 * 3600_000,
};

export type Admission = "admit" | "event-full" | "partition-full" | "rate-limited" | "partition-rate-limited";

/** Reporters remembered by the rate limit before the oldest windows are forgotten. */
const maxReportersTracked = 10_000;
/** Reporters remembered; past it, those not yet known (first seen recently) are forgotten to make room. */
export const maxKnownReporters = 50_000;
const minuteMs = 60_000;

/** What a `KnownReporters` remembers at most, and whom it tells when it forgets. */
export interface KnownReportersOptions {
  /** Reporters remembered (default 50,000); past it, those not yet known are forgotten to make room. */
  readonly maxReporters?: number;
  /** Told how many reporters were forgotten, or not remembered for want of room (a counter). */
  readonly onForgotten?: (count: number) => void;
}

/**
 * The reporters an instance has admitted records from, with when each was first seen: known once that is
 * `knownAfterMs` ago (or it was in a saved state). Bounded: past `maxReporters`, those not yet known go first; when
 * every one is known, a new reporter is not remembered. Either way each one forgotten is counted (`onForgotten`).
 */
export class KnownReporters {
  private readonly firstSeen = new Map<string, number>();
  private readonly maxReporters: number;
  private readonly onForgotten: (count: number) => void;

  constructor(
    private readonly knownAfterMs: number,
    options: KnownReportersOptions = {},
  ) {
    this.maxReporters = options.maxReporters ?? maxKnownReporters;
    this.onForgotten = options.onForgotten ?? (() => undefined);
  }

  /** Reporters remembered now (at most `maxReporters`). */
  get size(): number {
    return this.firstSeen.size;
  }

  note(reporter: string, nowMs: number): void {
    if (this.firstSeen.has(reporter)) return;
    if (this.firstSeen.size >= this.maxReporters) this.forgetNotYetKnown(nowMs);
    if (this.firstSeen.size < this.maxReporters) this.firstSeen.set(reporter, nowMs);
    else this.onForgotten(1);
  }

  isKnown(reporter: string, nowMs: number): boolean {
    const firstSeenMs = this.firstSeen.get(reporter);
    return firstSeenMs !== undefined && nowMs - firstSeenMs >= this.knownAfterMs;
  }

  private forgetNotYetKnown(nowMs: number): void {
    const before = this.firstSeen.size;
    for (const [name, firstSeenMs] of this.firstSeen)
      if (nowMs - firstSeenMs < this.knownAfterMs) this.firstSeen.delete(name);
    if (this.firstSeen.size < before) this.onForgotten(before - this.firstSeen.size);
  }
}

export class PartitionBounds {
  /** Per reporter: the start of its current minute and the new EventIds it opened in it. */
  private readonly opened = new Map<string, { startMs: number; count: number }>();
  /** The partition's current minute and the new EventIds opened in it. */
  private partitionWindow = { startMs: -Infinity, count: 0 };
  constructor(
    readonly settings: PartitionBoundsSettings,
    /** Shared by every partition of the instance: a VM known on one is known on all. */
    private readonly known: KnownReporters = new KnownReporters(settings.reporterKnownAfterMs),
  ) {}

  /** Remembers the reporters of events already in the partition's state as known. */
  knowReporters(events: Iterable<FleetEvent>): void {
    for (const event of events) for (const reporter of Object.keys(event.vms)) this.known.note(reporter, -Infinity);
  }

  /** Whether a VM that reported `event` is a known reporter (a flood's invented reporters are not, for a while). */
  reportedByKnown(event: FleetEvent, nowMs: number): boolean {
    for (const reporter in event.vms) if (this.known.isKnown(reporter, nowMs)) return true;
    return false;
  }

  /** Whether `record` may be folded into `previous` (undefined: it opens a new event among `eventCount`). */
  admit(previous: FleetEvent | undefined, record: FleetTransition, eventCount: number, nowMs: number): Admission {
    const reporter = reporterOf(record);
    const admission = this.admission(previous, reporter, eventCount, nowMs);
    if (admission === "admit") this.known.note(reporter, nowMs);
    return admission;
  }

  private admission(previous: FleetEvent | undefined, reporter: string, eventCount: number, nowMs: number): Admission {
    if (previous !== undefined) {
      const known = own(previous.vms, reporter) !== undefined;
      return known || Object.keys(previous.vms).length < this.settings.maxVmsPerEvent ? "admit" : "event-full";
    }
    if (eventCount >= this.settings.maxEventsPerPartition) return "partition-full";
    if (!this.partitionMayOpen(reporter, nowMs)) return "partition-rate-limited";
    if (!this.openedOne(reporter, nowMs)) return "rate-limited";
    this.partitionWindow.count++;
    return "admit";
  }

  /** Below the partition's rate, anyone may open an event; past it, only a known reporter. */
  private partitionMayOpen(reporter: string, nowMs: number): boolean {
    if (nowMs - this.partitionWindow.startMs >= minuteMs) this.partitionWindow = { startMs: nowMs, count: 0 };
    if (this.partitionWindow.count < this.settings.newEventsPerPartitionPerMinute) return true;
    return this.known.isKnown(reporter, nowMs);
  }

  /** `record` with a TimeGenerated in the future beyond the allowed skew read as `nowMs`. */
  clampTime(record: FleetTransition, nowMs: number): FleetTransition {
    if (Date.parse(record.TimeGenerated) <= nowMs + this.settings.maxClockSkewMs) return record;
    return { ...record, TimeGenerated: new Date(nowMs).toISOString() };
  }

  private openedOne(reporter: string, nowMs: number): boolean {
    let window = this.opened.get(reporter);
    if (window === undefined || nowMs - window.startMs >= minuteMs) {
      if (window === undefined && this.opened.size >= maxReportersTracked) this.forgetOldWindows(nowMs);
      window = { startMs: nowMs, count: 0 };
      this.opened.set(reporter, window);
    }
    if (window.count >= this.settings.newEventsPerReporterPerMinute) return false;
    window.count++;
    return true;
  }

  private forgetOldWindows(nowMs: number): void {
    for (const [reporter, window] of this.opened) if (nowMs - window.startMs >= minuteMs) this.opened.delete(reporter);
    // Every window is current (a flood of invented reporters): forget them all rather than grow without bound.
    if (this.opened.size >= maxReportersTracked) this.opened.clear();
  }
}
