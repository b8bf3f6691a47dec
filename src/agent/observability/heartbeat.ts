// Heartbeats: when a Heartbeat record (built in the contract, heartbeat-record.ts) is written: periodically, and a
// goodbye when the agent stops cleanly or its VM is about to go. Triggers are pure; `startHeartbeats` is a small
// drift-free scheduler on an injected clock.
import type { Logger } from "pino";
import type { HeartbeatRecord, RecordIdentity, RecordOrigin, TransitionRecord } from "@sef/contract/record.js";
import { goodbyeHeartbeatRecord, heartbeatRecord } from "@sef/contract/heartbeat-record.js";
import type { Clock } from "@sef/runtime/clock.js";

export const defaultHeartbeatIntervalMs = 15 * 60_000;

/** Event types after which this VM is gone (deleted, or a Spot VM evicted). */
const departingEventTypes: ReadonlySet<string> = new Set(["Terminate", "Preempt"]);

/**
 * What this VM's own transitions mean for the heartbeats: a Terminate or Preempt affecting it, Scheduled or Started →
 * say goodbye (the VM is about to go); the same event Canceled → resume. Undefined when they change nothing.
 */
export function departureSignal(
  records: readonly TransitionRecord[],
): { kind: "goodbye"; reason: string } | { kind: "resume"; reason: string } | undefined {
  let signal: { kind: "goodbye"; reason: string } | { kind: "resume"; reason: string } | undefined;
  for (const r of records) {
    if (!r.AffectsThisVm || !departingEventTypes.has(r.EventType)) continue;
    const reason = `${r.EventType} ${r.EventStatus} ${r.EventId}`;
    if (r.EventStatus === "Scheduled" || r.EventStatus === "Started") signal = { kind: "goodbye", reason };
    else if (r.EventStatus === "Canceled") signal = { kind: "resume", reason };
  }
  return signal;
}

export interface HeartbeatOptions {
  /** 0 = no heartbeats (and no goodbye). */
  intervalMs: number;
  clock: Clock;
  vm: RecordIdentity | (() => RecordIdentity);
  agentVersion: string;
  /** Statistics for Detail, read at each beat (e.g. polls, records, outbox depth). */
  stats: () => object | Promise<object>;
  /** Writes the record (typically appends it to the outbox). A failure is logged; the next beat still comes. */
  emit: (record: HeartbeatRecord) => void | Promise<void>;
  logger?: Logger;
}

export interface HeartbeatHandle {
  /** Stops the schedule; resolves after an emit in progress finished. With `goodbyeReason`, then writes the goodbye. */
  stop(goodbyeReason?: string): Promise<void>;
  /** Writes a goodbye now and pauses the beats (this VM is about to go) until `resume`. */
  goodbye(reason: string): Promise<void>;
  /** Ends a pause after a goodbye (the departure was canceled): one beat at once, then the schedule as before. */
  resume(): Promise<void>;
}

/** Emits one heartbeat at once, then one every `intervalMs` (on a fixed grid from the start: no drift). */
export function startHeartbeats(options: HeartbeatOptions): HeartbeatHandle {
  if (options.intervalMs <= 0)
    return { stop: async () => undefined, goodbye: async () => undefined, resume: async () => undefined };
  const { clock, intervalMs } = options;
  const stopped = new AbortController();
  let paused = false;
  const origin = (): RecordOrigin => ({
    vm: typeof options.vm === "function" ? options.vm() : options.vm,
    agentVersion: options.agentVersion,
  });
  const write = async (build: (stats: object) => HeartbeatRecord): Promise<void> => {
    try {
      await options.emit(build(await options.stats()));
    } catch (err) {
      options.logger?.warn({ err }, "heartbeat could not be written");
    }
  };
  const beat = (): Promise<void> => write((stats) => heartbeatRecord(origin(), clock.now(), stats));
  const sayGoodbye = (reason: string): Promise<void> => {
    options.logger?.info({ reason }, "writing the goodbye heartbeat");
    return write((stats) => goodbyeHeartbeatRecord(origin(), clock.now(), reason, stats));
  };
  const loop = (async () => {
    // The grid is on the monotonic clock (a wall step neither bursts nor stalls beats); TimeGenerated is wall time.
    let next = clock.monotonicMs();
    while (!stopped.signal.aborted) {
      if (!paused) await beat();
      next += intervalMs;
      const now = clock.monotonicMs();
      // Late (slow emit, suspended VM): the late beat just happened; skip the missed ones (no burst), stay on the grid.
      if (next < now) next += Math.ceil((now - next) / intervalMs) * intervalMs;
      try {
        await clock.sleep(Math.max(0, next - now), stopped.signal);
      } catch {
        return;
      }
    }
  })();
  return {
    stop: async (goodbyeReason) => {
      stopped.abort();
      await loop;
      if (goodbyeReason !== undefined) await sayGoodbye(goodbyeReason);
    },
    goodbye: async (reason) => {
      if (stopped.signal.aborted) return;
      paused = true;
      await sayGoodbye(reason);
    },
    resume: async () => {
      if (stopped.signal.aborted || !paused) return;
      paused = false;
      options.logger?.info("departure canceled: heartbeats resume");
      await beat();
    },
  };
}
