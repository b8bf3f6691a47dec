// Test fixtures for actions: a VM identity, a Scheduled event and the Transition record the collector would emit for it.
import type { TransitionRecord, RecordIdentity, EventFields, EventStatus } from "../../src/contract/record.js";
import { transitionRecord } from "../helpers/records.js";
import type { PostStartRequest } from "../../src/agent/actions/approval/approver.js";
import { ImdsClient } from "../../src/agent/imds/client.js";
import { systemClock } from "../../src/runtime/clock.js";

export const vm: RecordIdentity = {
  VmName: "WestNO_0",
  VmId: "11111111-2222-3333-4444-555555555555",
  VmResourceId: "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/WestNO_0",
  SubscriptionId: "s",
  ResourceGroup: "rg",
  Location: "norwayeast",
  VmScaleSetName: "",
  Zone: "",
  Tags: {},
  AgentId: "00000000-0000-4000-8000-000000000001",
};

export function event(
  overrides: Partial<EventFields> & { EventStatus?: EventStatus } = {},
): EventFields & { EventStatus: EventStatus } {
  return {
    EventId: "C7061BAC-AFDC-4513-B24B-AA5F13A16123",
    EventStatus: "Scheduled",
    EventType: "Freeze",
    ResourceType: "VirtualMachine",
    Resources: ["WestNO_0", "WestNO_1"],
    NotBefore: "2022-04-11T22:26:58.000Z",
    Description: "Virtual machine is being paused because of a memory-preserving Live Migration operation.",
    EventSource: "Platform",
    DurationInSeconds: 5,
    ...overrides,
  };
}

export function transition(overrides: Partial<TransitionRecord> = {}): TransitionRecord {
  return transitionRecord({
    ...vm,
    ...event(),
    TimeGenerated: "2022-04-11T22:10:00.000Z",
    ObservedAt: "2022-04-11T22:10:00.000Z",
    DocumentIncarnation: 2,
    ...overrides,
  });
}

/** The agent's approval transport: its IMDS client's POST (rate-limited, Metadata header, no proxy, no redirects). */
export function startRequestPoster(
  imdsUrl: string,
  options: { firstCallTimeoutMs?: number } = {},
): PostStartRequest & { close(): Promise<void> } {
  const client = new ImdsClient({ imdsUrl, apiVersion: "2020-07-01", clock: systemClock, ...options });
  const post: PostStartRequest = (eventIds, signal) => client.postStartRequests(eventIds, signal);
  return Object.assign(post, { close: () => client.close() });
}
