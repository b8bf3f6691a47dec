// Heartbeat records (pure): the periodic proof that an agent is alive, with its statistics as JSON in Detail, and the
// goodbye (Outcome "Stopping"). When they are written is the agent's heartbeat schedule (agent/observability).
import { buildRecord, type HeartbeatRecord, type RecordOrigin } from "./record.js";
import { deterministicUuid } from "./record-id.js";

/** A Heartbeat record at `nowMs`; RecordId is deterministic from (AgentId, VmId, "Heartbeat", TimeGenerated); `stats` go into Detail as JSON. */
export function heartbeatRecord(origin: RecordOrigin, nowMs: number, stats: object): HeartbeatRecord {
  const recordId = (source: string, time: string): string => deterministicUuid(source, "Heartbeat", time);
  return buildRecord<HeartbeatRecord>(origin, nowMs, recordId, {
    RecordType: "Heartbeat",
    Detail: JSON.stringify(stats),
  });
}

/**
 * The goodbye: a Heartbeat with Outcome "Stopping" and `{ state: "Stopping", reason, ...stats }` in Detail, so the
 * silent-agent query leaves the VM out. RecordId is deterministic from (AgentId, VmId, "HeartbeatStopping",
 * TimeGenerated).
 */
export function goodbyeHeartbeatRecord(
  origin: RecordOrigin,
  nowMs: number,
  reason: string,
  stats: object,
): HeartbeatRecord {
  const recordId = (source: string, time: string): string => deterministicUuid(source, "HeartbeatStopping", time);
  return buildRecord<HeartbeatRecord>(origin, nowMs, recordId, {
    RecordType: "Heartbeat",
    Detail: JSON.stringify({ state: "Stopping", reason, ...stats }),
    Outcome: "Stopping",
  });
}
