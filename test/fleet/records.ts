// Transition records of many VMs for the fleet tests, built like the agent builds them (RecordId from the contract).
import { transitionRecord } from "../helpers/records.js";
import type { EventStatus, TransitionRecord } from "../../src/contract/record.js";

export interface VmFixture {
  readonly name: string;
  readonly zone: string;
  readonly scaleSet: string;
  readonly resourceGroup: string;
  readonly tags?: Record<string, string>;
}

export function vm(index: number, scaleSet = "web-vmss", zone = String((index % 3) + 1)): VmFixture {
  return { name: `${scaleSet}_${index}`, zone, scaleSet, resourceGroup: "rg-web" };
}

export function fleetTransition(
  eventId: string,
  status: EventStatus,
  reporter: VmFixture,
  affected: readonly VmFixture[],
  options: { eventType?: string; notBefore?: string | null; timeMs?: number; eventSource?: string } = {},
): TransitionRecord {
  const vmId = `00000000-0000-0000-0000-${reporter.name.replace(/[^0-9]/g, "").padStart(12, "0")}`;
  return transitionRecord({
    TimeGenerated: new Date(options.timeMs ?? Date.now()).toISOString(),
    ObservedAt: new Date(options.timeMs ?? Date.now()).toISOString(),
    EventId: eventId,
    EventStatus: status,
    EventType: options.eventType ?? "Reboot",
    Resources: affected.map((v) => v.name),
    NotBefore:
      options.notBefore === undefined
        ? new Date((options.timeMs ?? Date.now()) + 15 * 60_000).toISOString()
        : options.notBefore,
    Description: "Host server is undergoing maintenance.",
    EventSource: options.eventSource ?? "Platform",
    AffectsThisVm: affected.some((v) => v.name === reporter.name),
    VmName: reporter.name,
    VmId: vmId,
    VmResourceId: `/subscriptions/0000/resourceGroups/${reporter.resourceGroup}/providers/Microsoft.Compute/virtualMachines/${reporter.name}`,
    ResourceGroup: reporter.resourceGroup,
    VmScaleSetName: reporter.scaleSet,
    Zone: reporter.zone,
    Tags: reporter.tags ?? {},
    AgentId: `agent-${reporter.name}`,
  });
}
