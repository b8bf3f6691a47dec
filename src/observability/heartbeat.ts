// Heartbeats: a periodic Heartbeat record proving the agent is alive and watching, with its statistics in Detail.
// `heartbeatRecord` is pure; `startHeartbeats` is a small drift-free scheduler on an injected clock.
import type { Logger } from "pino";
import type { HeartbeatRecord, RecordIdentity } from "../contract/record.js";
import { deterministicUuid, recordSource } from "../contract/record-id.js";
import type { Clock } from "../util/clock.js";

export const defaultHeartbeatIntervalMs = 15 * 60_000;

/** A Heartbeat record at `nowMs`; RecordId is deterministic from (AgentId, VmId, "Heartbeat", TimeGenerated); `stats` go into Detail as JSON. */
export function heartbeatRecord(vm: RecordIdentity, nowMs: number, stats: object, agentVersion: string): HeartbeatRecord {
  const timeGenerated = new Date(nowMs).toISOString();
  return {
    ...pickVm(vm),
    RecordId: deterministicUuid(recordSource(vm), "Heartbeat", timeGenerated),
    RecordType: "Heartbeat",
    TimeGenerated: timeGenerated,
    AgentVersion: agentVersion,
    Detail: JSON.stringify(stats),
  };
}

function pickVm(vm: RecordIdentity): RecordIdentity {
  const { VmName, VmId, VmResourceId, SubscriptionId, ResourceGroup, Location, VmScaleSetName, Zone, AgentId } = vm;
  return { VmName, VmId, VmResourceId, SubscriptionId, ResourceGroup, Location, VmScaleSetName, Zone, AgentId };
}

export interface HeartbeatOptions {
  /** 0 = no heartbeats. */
  intervalMs: number;
  clock: Clock;
  vm: RecordIdentity | (() => RecordIdentity);
  agentVersion: string;
  /** Statistics for Detail, read at each beat (e.g. polls, records, outbox depth). */
  stats: () => object;
  /** Writes the record (typically appends it to the outbox). A failure is logged; the next beat still comes. */
  emit: (record: HeartbeatRecord) => void | Promise<void>;
  logger?: Logger;
}

export interface HeartbeatHandle {
  /** Stops the schedule; resolves after an emit in progress finished. */
  stop(): Promise<void>;
}

/** Emits one heartbeat at once, then one every `intervalMs` (on a fixed grid from the start: no drift). */
export function startHeartbeats(options: HeartbeatOptions): HeartbeatHandle {
  if (options.intervalMs <= 0) return { stop: async () => undefined };
  const { clock, intervalMs } = options;
  const stopped = new AbortController();
  const beat = async (): Promise<void> => {
    try {
      const vm = typeof options.vm === "function" ? options.vm() : options.vm;
      await options.emit(heartbeatRecord(vm, clock.now(), options.stats(), options.agentVersion));
    } catch (err) {
      options.logger?.warn({ err }, "heartbeat could not be written");
    }
  };
  const loop = (async () => {
    let next = clock.now();
    while (!stopped.signal.aborted) {
      await beat();
      next += intervalMs;
      const now = clock.now();
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
    stop: async () => {
      stopped.abort();
      await loop;
    },
  };
}
