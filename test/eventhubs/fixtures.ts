// Test fixtures for the Event Hubs sink: outbox entries of transition and heartbeat records, a sink factory for a peer,
// and a tally of per-record outcomes (drains go through the real drainer: test/helpers/ledger-drain.ts).
import { transitionRecord } from "../helpers/records.js";
import {
  unknownVmIdentity,
  type EventStatus,
  type HeartbeatRecord,
  type SefRecord,
  type TransitionRecord,
} from "../../src/contract/record.js";
import { heartbeatRecord } from "../../src/contract/heartbeat-record.js";
import { silentLogger } from "../../src/agent/observability/logger.js";
import {
  createEventHubsSink,
  eventHubsSettingsSchema,
  type EventHubsSink,
} from "../../src/agent/sinks/eventhubs/index.js";
import type { SendOutcomes } from "../../src/agent/sinks/sink.js";
import type { OutboxEntry } from "../../src/agent/delivery/outbox-entry.js";

export const vmId = "6c5d0d4a-1111-2222-3333-444455556666";
const statuses: readonly EventStatus[] = ["Scheduled", "Started", "Completed"];

export function transition(eventId: string, status: EventStatus, index: number, padding = ""): TransitionRecord {
  return transitionRecord({
    TimeGenerated: new Date(1_700_000_000_000 + index).toISOString(),
    ObservedAt: new Date(1_700_000_000_000 + index).toISOString(),
    EventId: eventId,
    EventStatus: status,
    Resources: ["web-vmss_3"],
    Description: padding,
    DocumentIncarnation: index + 1,
    VmName: "web-vmss_3",
    VmId: vmId,
    VmResourceId: "/subscriptions/0000/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/web-vmss_3",
    VmScaleSetName: "web-vmss",
    Zone: "2",
  });
}

/** A Heartbeat record as the agent builds it (no EventId: its partition key falls back to the VmId). */
export function heartbeat(index: number): HeartbeatRecord {
  const vm = {
    ...unknownVmIdentity,
    VmName: "web-vmss_3",
    VmId: vmId,
    AgentId: "00000000-0000-4000-8000-000000000001",
  };
  return heartbeatRecord({ vm, agentVersion: "0.1.0" }, 1_700_000_000_000 + index, {});
}

export function entries(records: readonly SefRecord[], firstSeq = 1): OutboxEntry[] {
  return records.map((record, i) => ({ seq: firstSeq + i, record, json: JSON.stringify(record) }));
}

/** `events` events × Scheduled/Started/Completed, interleaved the way a busy VM scale set would see them. */
export function interleavedTransitions(events: number, padding = ""): TransitionRecord[] {
  const out: TransitionRecord[] = [];
  for (const status of statuses) {
    for (let e = 0; e < events; e++)
      out.push(transition(`EV-${String(e).padStart(5, "0")}`, status, out.length, padding));
  }
  return out;
}

export function sinkFor(connectionString: string, overrides: Record<string, unknown> = {}): EventHubsSink {
  const settings = eventHubsSettingsSchema.parse({
    connectionString,
    maxRetries: 0,
    retryDelayMs: 50,
    tryTimeoutMs: 5000,
    ...overrides,
  });
  return createEventHubsSink(settings, { logger: silentLogger() }, {});
}

/** How many outcomes of each kind. */
export function tally(outcomes: SendOutcomes): { delivered: number; retry: number; rejected: number } {
  const t = { delivered: 0, retry: 0, rejected: 0 };
  for (const o of outcomes) t[o.kind] += 1;
  return t;
}
