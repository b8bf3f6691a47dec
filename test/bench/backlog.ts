// The backlog both drain benchmarks send: transition records as a scale set's outage would leave them in the outbox.
import { transitionRecordId } from "../../src/contract/record-id.js";
import type { EventStatus, TransitionRecord } from "../../src/contract/record.js";
import type { OutboxEntry } from "../../src/agent/delivery/outbox-entry.js";

const statuses: readonly EventStatus[] = ["Scheduled", "Started", "Completed"];

/** A backlog as a scale set's outage would leave it: events of many VMs, each with its transitions in order. */
export function transitionBacklog(records: number): OutboxEntry[] {
  const startMs = Date.now() - 3_600_000;
  return Array.from({ length: records }, (_, i) => {
    const eventIndex = Math.floor(i / statuses.length);
    const vm = eventIndex % 500;
    const vmId = `6c5d0d4a-1111-2222-3333-${String(vm).padStart(12, "0")}`;
    const EventId = `A5C1E7F3-${String(eventIndex).padStart(8, "0")}-4B1D-9C1B`;
    const EventStatus = statuses[i % statuses.length]!;
    const record: TransitionRecord = {
      RecordId: transitionRecordId(vmId, EventId, EventStatus),
      RecordType: "Transition",
      TimeGenerated: new Date(startMs + i).toISOString(),
      ObservedAt: new Date(startMs + i).toISOString(),
      EventId,
      EventStatus,
      PreviousStatus: EventStatus === "Scheduled" ? "" : EventStatus === "Started" ? "Scheduled" : "Started",
      EventType: "Reboot",
      ResourceType: "VirtualMachine",
      Resources: [`web-vmss_${vm}`],
      NotBefore: new Date(startMs + 900_000).toISOString(),
      Description: "Virtual machine is going to be restarted as requested by authorized user.",
      EventSource: "User",
      DurationInSeconds: -1,
      DocumentIncarnation: eventIndex + 1,
      AffectsThisVm: true,
      ObservationGap: false,
      VmName: `web-vmss_${vm}`,
      VmId: vmId,
      VmResourceId: `/subscriptions/0000/resourceGroups/rg-web/providers/Microsoft.Compute/virtualMachineScaleSets/web-vmss/virtualMachines/${vm}`,
      SubscriptionId: "00000000-0000-0000-0000-000000000000",
      ResourceGroup: "rg-web",
      Location: "westeurope",
      VmScaleSetName: "web-vmss",
      Zone: "2",
      Tags: {},
      AgentId: "00000000-0000-4000-8000-000000000001",
      AgentVersion: "0.1.0",
    };
    return { seq: i + 1, record, json: JSON.stringify(record) };
  });
}
