// Heartbeat records numbered `i` (RecordId `${tag}-${i}`, times 1 ms apart from a fixed instant), for tests that fill
// a store or a sink with many valid records.
import { unknownVmIdentity, type HeartbeatRecord } from "../../src/contract/record.js";

export function heartbeatRecord(i: number, options: { tag?: string; detail?: string } = {}): HeartbeatRecord {
  const at = new Date(1_700_000_000_000 + i).toISOString();
  return {
    RecordId: `${options.tag ?? "rid"}-${i}`,
    RecordType: "Heartbeat",
    TimeGenerated: at,
    ObservedAt: at,
    AgentId: "test-agent",
    ...unknownVmIdentity,
    AgentVersion: "t",
    Detail: options.detail ?? "",
  };
}
