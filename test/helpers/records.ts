// The one record builder of the tests: a full Transition record (its RecordId computed as the agent computes it, unless
// given) and heartbeat records numbered `i`, each with defaults a test overrides field by field. The per-area fixtures
// (Event Hubs, Log Analytics, actions, fleet) only choose their own defaults on top of these.
import { unknownVmIdentity, type HeartbeatRecord, type TransitionRecord } from "../../src/contract/record.js";
import { transitionRecordId } from "../../src/contract/record-id.js";

/** A Scheduled Reboot of VM `vm-1`, observed at a fixed instant; `overrides` replace any field. */
export function transitionRecord(overrides: Partial<TransitionRecord> = {}): TransitionRecord {
  const at = new Date(1_700_000_000_000).toISOString();
  const record: TransitionRecord = {
    RecordId: "",
    RecordType: "Transition",
    TimeGenerated: at,
    ObservedAt: at,
    EventId: "00000000-0000-4000-8000-000000000001",
    EventStatus: "Scheduled",
    PreviousStatus: "",
    EventType: "Reboot",
    ResourceType: "VirtualMachine",
    Resources: ["vm-1"],
    NotBefore: null,
    Description: "",
    EventSource: "Platform",
    DurationInSeconds: -1,
    DocumentIncarnation: 1,
    AffectsThisVm: true,
    ObservationGap: false,
    VmName: "vm-1",
    VmId: "6c5d0d4a-1111-2222-3333-444455556666",
    VmResourceId: "/subscriptions/0000/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/vm-1",
    SubscriptionId: "00000000-0000-0000-0000-000000000000",
    ResourceGroup: "rg",
    Location: "westeurope",
    VmScaleSetName: "",
    Zone: "",
    Tags: {},
    AgentId: "00000000-0000-4000-8000-000000000001",
    AgentVersion: "0.1.0",
    ...overrides,
  };
  return {
    ...record,
    RecordId: record.RecordId || transitionRecordId(record.VmId, record.EventId, record.EventStatus),
  };
}

/** Heartbeat record `i` (RecordId `${tag}-${i}` unless `recordId` is given, times 1 ms apart from a fixed instant). */
export function heartbeatRecord(
  i: number,
  options: { tag?: string; detail?: string; recordId?: string; agentId?: string } = {},
): HeartbeatRecord {
  const at = new Date(1_700_000_000_000 + i).toISOString();
  return {
    RecordId: options.recordId ?? `${options.tag ?? "rid"}-${i}`,
    RecordType: "Heartbeat",
    TimeGenerated: at,
    ObservedAt: at,
    AgentId: options.agentId ?? "test-agent",
    ...unknownVmIdentity,
    AgentVersion: "t",
    Detail: options.detail ?? "",
  };
}
