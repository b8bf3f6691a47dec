// What one running simulator holds between requests (the scenario's timeline, the tags per VM, what it counted and
// approved) and the operations on it that the routes and the control API share: advancing the timeline, the status.
import { z } from "zod";
import type { Logger } from "../support/logger.js";
import type { Clock } from "@sef/runtime/clock.js";

/** The part of a clock the simulator needs: the wall clock its timelines run on, and an abortable sleep. */
export type SimulatorClock = Pick<Clock, "now" | "sleep">;
import { latestScheduledEventsApiVersion, type ScheduledEventsApiVersion } from "./api-versions.js";
import { renderDocument, type ImdsDocument } from "./document.js";
import { scenarioEventSchema, type Scenario } from "./scenario-schema.js";
import type { ApprovalOutcome, DocumentChange, Timeline } from "./timeline.js";

export interface ApprovalEntry {
  EventId: string;
  at: string;
  atMs: number;
  outcome: ApprovalOutcome;
  /** How many approvals this EventId has received so far, this one included. */
  count: number;
}

export interface SimStatus {
  scenario: string;
  description: string;
  speed: number;
  loop: boolean;
  started: boolean;
  startedAt: string | null;
  scenarioSeconds: number;
  durationSeconds: number;
  ended: boolean;
  loopIndex: number;
  incarnation: number;
  /** The document at the newest api-version. */
  document: ImdsDocument;
  approvals: ApprovalEntry[];
  /** StartRequests POSTs received and still held by `approvalDelayMs` (not yet in `approvals`). */
  approvalsHeld: number;
  /** Requests by path, then by HTTP status (`reset` for connections dropped on purpose). Excludes /__sim/. */
  requests: Record<string, Record<string, number>>;
  /** Faults served, by kind (`status:500`, `malformed-json`, ...). */
  faultsServed: Record<string, number>;
}

/** The next `count` managed-identity token requests are answered `status` (test-only: a failing token endpoint). */
export interface TokenFault {
  count: number;
  status: number;
}

export interface SimState {
  readonly scenario: Scenario;
  readonly clock: SimulatorClock;
  readonly logger: Logger;
  readonly timeline: Timeline;
  readonly vmTags: Map<string, Readonly<Record<string, string>>>;
  readonly requestCounts: Record<string, Record<string, number>>;
  /** The latest requests (up to {@link requestLogLimit}) in arrival order; excludes /__sim/. */
  readonly requestLog: RequestLogEntry[];
  readonly faultsServed: Record<string, number>;
  readonly approvals: ApprovalEntry[];
  readonly approvalCounts: Map<string, number>;
  /** Aborted when the simulator closes (ends held approvals and slow answers). */
  readonly lifetime: AbortController;
  /** Test-only: how long each StartRequests POST is held (see SimulatorOptions.approvalDelayMs). */
  readonly approvalDelayMs: number;
  approvalsHeld: number;
  malformedRotation: number;
  tokenFault: TokenFault;
  hugeCache: { key: string; body: string } | null;
  /** Resolves `waitForEnd` once a non-looping scenario has run its duration. */
  endResolve: (() => void) | null;
}

export function logChanges(state: SimState, changes: readonly DocumentChange[]): void {
  for (const change of changes) {
    state.logger.info(
      {
        incarnation: change.incarnation,
        cause: change.cause,
        events: change.events,
        scenarioSeconds: Math.round(state.timeline.scenarioSeconds(change.atMs)),
      },
      "document changed",
    );
  }
}

export function sync(state: SimState, nowMs: number): void {
  logChanges(state, state.timeline.advance(nowMs));
  if (state.endResolve && state.timeline.ended(nowMs)) {
    state.logger.info({ scenario: state.scenario.name }, "scenario ended; serving the final document");
    state.endResolve();
    state.endResolve = null;
  }
}

export function startTimeline(state: SimState, nowMs: number): void {
  if (!state.timeline.started) {
    state.logger.info({ scenario: state.scenario.name, speed: state.timeline.speed }, "scenario started");
    logChanges(state, state.timeline.start(nowMs));
  }
  sync(state, nowMs);
}

/** One request as the simulator saw it: when it arrived (its clock's `now()`), where, and the answer's status label. */
export interface RequestLogEntry {
  readonly atMs: number;
  readonly path: string;
  readonly status: string;
}

/** How many requests the request log keeps (the oldest are dropped first). */
export const requestLogLimit = 10_000;

export function countRequest(state: SimState, path: string, status: string, arrivedAtMs: number): void {
  const byStatus = (state.requestCounts[path] ??= {});
  byStatus[status] = (byStatus[status] ?? 0) + 1;
  state.requestLog.push({ atMs: arrivedAtMs, path, status });
  if (state.requestLog.length > requestLogLimit) state.requestLog.splice(0, state.requestLog.length - requestLogLimit);
}

export function currentDocument(state: SimState, apiVersion: ScheduledEventsApiVersion): ImdsDocument {
  return renderDocument(state.timeline.snapshot(), apiVersion);
}

export function status(state: SimState): SimStatus {
  const { clock, timeline, scenario } = state;
  const nowMs = clock.now();
  sync(state, nowMs);
  const startedAtMs = timeline.startedAtMs;
  return {
    scenario: scenario.name,
    description: scenario.description,
    speed: timeline.speed,
    loop: timeline.loop,
    started: timeline.started,
    startedAt: startedAtMs === null ? null : new Date(startedAtMs).toISOString(),
    scenarioSeconds: timeline.scenarioSeconds(nowMs),
    durationSeconds: scenario.durationSeconds,
    ended: timeline.ended(nowMs),
    loopIndex: timeline.loopIndex,
    incarnation: timeline.incarnation,
    document: currentDocument(state, latestScheduledEventsApiVersion),
    approvals: state.approvals.map((a) => ({ ...a })),
    approvalsHeld: state.approvalsHeld,
    requests: structuredClone(state.requestCounts),
    faultsServed: { ...state.faultsServed },
  };
}

/** Replaces the Events array now (new incarnation). */
export function setEvents(
  state: SimState,
  events: readonly z.input<typeof scenarioEventSchema>[],
): { changedAtMs: number; incarnation: number } {
  const parsed = z.array(scenarioEventSchema).parse(events);
  const changedAtMs = state.clock.now();
  sync(state, changedAtMs);
  const incarnation = state.timeline.replaceEvents(parsed, changedAtMs);
  state.logger.info({ incarnation, events: parsed.map((e) => e.EventId) }, "document replaced through the control API");
  return { changedAtMs, incarnation };
}

/** Jumps scenario time forward. */
export function advance(state: SimState, seconds: number): SimStatus {
  logChanges(state, state.timeline.fastForward(seconds, state.clock.now()));
  return status(state);
}
