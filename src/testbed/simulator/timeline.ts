// Pure scenario state machine: scenario steps, NotBefore auto-start, Started timeouts, approvals and faults,
// evaluated at any wall-clock time the caller passes (no timers, no I/O).
import { ScenarioError, type Fault, type Scenario, type ScenarioEvent } from "./scenario-schema.js";

/** An event as the simulated IMDS currently holds it (times are wall-clock ms). */
export interface LiveEvent {
  EventId: string;
  EventType: string;
  EventStatus: "Scheduled" | "Started";
  ResourceType: string;
  Resources: string[];
  Description: string;
  EventSource: string;
  DurationInSeconds: number;
  notBeforeMs: number | null;
  startedAtMs: number | null;
  startedForMs: number;
  autoStart: boolean;
}

export interface TimelineOptions {
  /** Scenario seconds per wall-clock second; default: the scenario's `speed`. */
  speed?: number;
  /** Restart the scenario when it ends (DocumentIncarnation keeps counting up). */
  loop?: boolean;
}

export type ApprovalOutcome = "started" | "already-started" | "unknown";

/** A change of the document, for logs. */
export interface DocumentChange {
  atMs: number;
  incarnation: number;
  cause: "step" | "auto" | "reset" | "approval" | "replace";
  events: string[];
}

interface ActiveFault {
  fault: Fault;
  untilMs: number | null;
  remaining: number | null;
}

/** What a scenario defines about an event; the timeline adds its id and when it started. */
type EventDefinition = Omit<LiveEvent, "EventId" | "startedAtMs">;

const defaultNotBeforeSeconds = 900;

export class Timeline {
  readonly speed: number;
  readonly loop: boolean;
  private loopStartMs: number | null = null;
  private loopIndexValue = 0;
  private nextStep = 0;
  private incarnationValue = 0;
  private events: LiveEvent[] = [];
  private readonly known = new Map<string, EventDefinition>();
  /** Events the simulator itself started (approval / NotBefore) or removed (Started timeout): steps cannot undo that. */
  private readonly dynamic = new Map<string, { startedAtMs?: number; ended?: boolean }>();
  private faults: ActiveFault[] = [];
  private readonly changeLog: DocumentChange[] = [];

  constructor(
    readonly scenario: Scenario,
    options: TimelineOptions = {},
  ) {
    this.speed = options.speed ?? scenario.speed;
    if (!(this.speed > 0) || !Number.isFinite(this.speed))
      throw new ScenarioError(`speed must be a positive number, got ${this.speed}`);
    this.loop = options.loop ?? false;
    if (this.loop && scenario.durationSeconds <= 0)
      throw new ScenarioError("cannot loop a scenario whose durationSeconds is 0");
  }

  get started(): boolean {
    return this.loopStartMs !== null;
  }

  get incarnation(): number {
    return this.incarnationValue;
  }

  get loopIndex(): number {
    return this.loopIndexValue;
  }

  /** Wall-clock ms of the current loop's start, or null before `start`. */
  get startedAtMs(): number | null {
    return this.loopStartMs;
  }

  /** Wall-clock milliseconds that `seconds` of scenario time take at this speed. */
  wallMs(seconds: number): number {
    return (seconds * 1000) / this.speed;
  }

  /** Starts scenario time at `nowMs` (idempotent) and applies what is due. */
  start(nowMs: number): DocumentChange[] {
    if (this.loopStartMs === null) this.loopStartMs = nowMs;
    return this.advance(nowMs);
  }

  /** Scenario seconds elapsed in the current loop (0 before start). */
  scenarioSeconds(nowMs: number): number {
    if (this.loopStartMs === null) return 0;
    return Math.max(0, ((nowMs - this.loopStartMs) * this.speed) / 1000);
  }

  endMs(): number | null {
    return this.loopStartMs === null ? null : this.loopStartMs + this.wallMs(this.scenario.durationSeconds);
  }

  /** True once the (non-looping) scenario has run its `durationSeconds`. */
  ended(nowMs: number): boolean {
    const end = this.endMs();
    return !this.loop && end !== null && nowMs >= end;
  }

  snapshot(): { incarnation: number; events: readonly LiveEvent[] } {
    return {
      incarnation: this.incarnationValue,
      events: this.events.map((e) => ({ ...e, Resources: [...e.Resources] })),
    };
  }

  /** Document changes so far (oldest first). */
  changes(): readonly DocumentChange[] {
    return this.changeLog;
  }

  /** Applies every step and automatic transition due by `nowMs`, in time order; returns the document changes. */
  advance(nowMs: number): DocumentChange[] {
    const out: DocumentChange[] = [];
    for (;;) {
      const startMs = this.loopStartMs;
      if (startMs === null) return out;
      const endMs: number = startMs + this.wallMs(this.scenario.durationSeconds);
      const limitMs = Math.min(nowMs, endMs);
      const step = this.scenario.steps[this.nextStep];
      const stepMs = step === undefined ? Infinity : startMs + this.wallMs(step.at);
      const dueMs = Math.min(stepMs, this.nextAutomaticMs());
      if (dueMs <= limitMs) {
        const change = this.applyAt(dueMs);
        if (change) out.push(change);
        continue;
      }
      if (this.loop && nowMs >= endMs) {
        this.loopStartMs = endMs;
        this.loopIndexValue += 1;
        this.nextStep = 0;
        this.known.clear();
        this.dynamic.clear();
        this.faults = [];
        continue;
      }
      return out;
    }
  }

  /** POST StartRequests: a Scheduled event starts now; others are left alone. */
  approve(eventIds: readonly string[], nowMs: number): ApprovalOutcome[] {
    this.advance(nowMs);
    let changed = false;
    const outcomes = eventIds.map((id): ApprovalOutcome => {
      const event = this.events.find((e) => e.EventId === id);
      if (!event) return "unknown";
      if (event.EventStatus === "Started") return "already-started";
      event.EventStatus = "Started";
      event.startedAtMs = nowMs;
      this.dynamic.set(id, { startedAtMs: nowMs });
      changed = true;
      return "started";
    });
    if (changed) this.record(nowMs, "approval", this.incarnationValue + 1);
    return outcomes;
  }

  /** Replaces the Events array now (test control API); always a new incarnation. */
  replaceEvents(events: readonly ScenarioEvent[], nowMs: number): number {
    const ids = new Set<string>();
    events.forEach((event, index) => {
      if (ids.has(event.EventId)) throw new ScenarioError(`Events[${index}].EventId: duplicate ${event.EventId}`);
      ids.add(event.EventId);
      if (this.known.has(event.EventId)) return;
      for (const field of ["EventType", "Resources"] as const) {
        if (event[field] === undefined)
          throw new ScenarioError(
            `Events[${index}].${field}: required on the first appearance of event ${event.EventId}`,
          );
      }
    });
    if (this.loopStartMs === null) this.loopStartMs = nowMs;
    this.advance(nowMs);
    for (const id of ids) this.dynamic.delete(id);
    this.applyList(events, nowMs);
    this.record(nowMs, "replace", this.incarnationValue + 1);
    return this.incarnationValue;
  }

  /** Jumps scenario time forward by `seconds` (everything pending comes that much sooner). */
  fastForward(seconds: number, nowMs: number): DocumentChange[] {
    if (this.loopStartMs === null) this.loopStartMs = nowMs;
    const ms = this.wallMs(seconds);
    this.loopStartMs -= ms;
    for (const event of this.events) {
      if (event.notBeforeMs !== null) event.notBeforeMs -= ms;
      if (event.startedAtMs !== null) event.startedAtMs -= ms;
    }
    for (const fault of this.faults) if (fault.untilMs !== null) fault.untilMs -= ms;
    return this.advance(nowMs);
  }

  /** The fault to serve for a GET of the document at `nowMs`, if any (consumes one from a counted fault). */
  takeFault(nowMs: number): Fault | null {
    this.advance(nowMs);
    this.faults = this.faults.filter(
      (f) => (f.untilMs === null || nowMs < f.untilMs) && (f.remaining === null || f.remaining > 0),
    );
    const active = this.faults[0];
    if (!active) return null;
    if (active.remaining !== null) active.remaining -= 1;
    return active.fault;
  }

  private nextAutomaticMs(): number {
    let next = Infinity;
    for (const event of this.events) {
      if (event.EventStatus === "Scheduled" && event.autoStart && event.notBeforeMs !== null)
        next = Math.min(next, event.notBeforeMs);
      if (event.EventStatus === "Started" && event.startedAtMs !== null)
        next = Math.min(next, event.startedAtMs + event.startedForMs);
    }
    return next;
  }

  private applyAt(atMs: number): DocumentChange | null {
    const before = this.contentKey();
    let reset = false;
    let stepped = false;
    for (;;) {
      const step = this.scenario.steps[this.nextStep];
      if (step === undefined || (this.loopStartMs as number) + this.wallMs(step.at) > atMs) break;
      this.nextStep += 1;
      stepped = true;
      if (step.events) this.applyList(step.events, atMs);
      if (step.fault) {
        const untilMs = step.fault.forSeconds === undefined ? null : atMs + this.wallMs(step.fault.forSeconds);
        const remaining = step.fault.count ?? (step.fault.forSeconds === undefined ? 1 : null);
        this.faults.push({ fault: step.fault, untilMs, remaining });
      }
      if (step.reset) reset = true;
    }
    this.applyAutomatic(atMs);
    if (reset) return this.record(atMs, "reset", 1);
    if (before === this.contentKey()) return null;
    return this.record(atMs, stepped ? "step" : "auto", this.incarnationValue + 1);
  }

  private applyAutomatic(atMs: number): boolean {
    let changed = false;
    const kept: LiveEvent[] = [];
    for (const event of this.events) {
      if (
        event.EventStatus === "Scheduled" &&
        event.autoStart &&
        event.notBeforeMs !== null &&
        event.notBeforeMs <= atMs
      ) {
        event.EventStatus = "Started";
        event.startedAtMs = event.notBeforeMs;
        this.dynamic.set(event.EventId, { startedAtMs: event.notBeforeMs });
        changed = true;
      }
      if (
        event.EventStatus === "Started" &&
        event.startedAtMs !== null &&
        event.startedAtMs + event.startedForMs <= atMs
      ) {
        this.dynamic.set(event.EventId, { ended: true });
        changed = true;
        continue;
      }
      kept.push(event);
    }
    this.events = kept;
    return changed;
  }

  private applyList(list: readonly ScenarioEvent[], atMs: number): void {
    const next: LiveEvent[] = [];
    for (const item of list) {
      const previous = this.known.get(item.EventId);
      const definition: EventDefinition = {
        EventType: item.EventType ?? previous?.EventType ?? "",
        EventStatus: item.EventStatus ?? previous?.EventStatus ?? "Scheduled",
        ResourceType: item.ResourceType ?? previous?.ResourceType ?? "VirtualMachine",
        Resources: item.Resources ?? previous?.Resources ?? [],
        Description: item.Description ?? previous?.Description ?? "",
        EventSource: item.EventSource ?? previous?.EventSource ?? "Platform",
        DurationInSeconds: item.DurationInSeconds ?? previous?.DurationInSeconds ?? -1,
        notBeforeMs:
          item.notBeforeInSeconds !== undefined
            ? atMs + this.wallMs(item.notBeforeInSeconds)
            : previous
              ? previous.notBeforeMs
              : atMs + this.wallMs(defaultNotBeforeSeconds),
        startedForMs:
          item.startedForSeconds !== undefined
            ? this.wallMs(item.startedForSeconds)
            : (previous?.startedForMs ?? this.wallMs(this.scenario.startedForSeconds)),
        autoStart: item.autoStart ?? previous?.autoStart ?? true,
      };
      this.known.set(item.EventId, definition);
      const override = this.dynamic.get(item.EventId);
      if (override?.ended) continue;
      const current = this.events.find((e) => e.EventId === item.EventId);
      let status = definition.EventStatus;
      let startedAtMs: number | null = null;
      if (override?.startedAtMs !== undefined) {
        status = "Started";
        startedAtMs = override.startedAtMs;
      } else if (status === "Started") {
        startedAtMs = current?.EventStatus === "Started" && current.startedAtMs !== null ? current.startedAtMs : atMs;
      }
      next.push({
        EventId: item.EventId,
        EventType: definition.EventType,
        EventStatus: status,
        ResourceType: definition.ResourceType,
        Resources: [...definition.Resources],
        Description: definition.Description,
        EventSource: definition.EventSource,
        DurationInSeconds: definition.DurationInSeconds,
        notBeforeMs: definition.notBeforeMs,
        startedAtMs,
        startedForMs: definition.startedForMs,
        autoStart: definition.autoStart,
      });
    }
    this.events = next;
  }

  private contentKey(): string {
    return JSON.stringify(
      this.events.map((e) => [
        e.EventId,
        e.EventStatus,
        e.EventType,
        e.ResourceType,
        e.Resources,
        e.Description,
        e.EventSource,
        e.DurationInSeconds,
        e.EventStatus === "Scheduled" && e.notBeforeMs !== null ? Math.floor(e.notBeforeMs / 1000) : null,
      ]),
    );
  }

  private record(atMs: number, cause: DocumentChange["cause"], incarnation: number): DocumentChange {
    this.incarnationValue = incarnation;
    const change: DocumentChange = {
      atMs,
      incarnation,
      cause,
      events: this.events.map((e) => `${e.EventId}:${e.EventStatus}`),
    };
    this.changeLog.push(change);
    if (this.changeLog.length > 1000) this.changeLog.shift();
    return change;
  }
}
