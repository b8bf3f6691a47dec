// The record envelope: every producer's records go through the contract's `buildRecord`, so a common field set there
// reaches every record kind. The builder is wrapped to stamp a probe field, as a new common field would be.
import { describe, expect, expectTypeOf, it, vi } from "vitest";
import type * as RecordModule from "../../src/contract/record.js";
import {
  recordTypes,
  type RecordEnvelope,
  type RecordFields,
  type SefRecord,
  type TransitionRecord,
} from "../../src/contract/record.js";
import { applyDocument, type CollectContext } from "../../src/agent/collector/transitions.js";
import { emptyCollectorState } from "../../src/agent/collector/state.js";
import { interruptedHookRecord } from "../../src/agent/actions/hooks/hooks.js";
import { kubernetesRecord } from "../../src/agent/actions/kubernetes/records.js";
import { attemptApproval, interruptedApprovalRecord } from "../../src/agent/actions/approval/approver.js";
import { startHeartbeats } from "../../src/agent/observability/heartbeat.js";
import { silentLogger } from "../../src/agent/observability/logger.js";
import { FakeClock } from "../helpers/fake-clock.js";
import { event, transition, vm } from "../actions/fixtures.js";

/** What the wrapped builder adds: stands for a common field added to the envelope in the contract alone. */
const probe = { EnvelopeProbe: "set by buildRecord" };

vi.mock("../../src/contract/record.js", async (importOriginal) => {
  const contract = await importOriginal<typeof RecordModule>();
  const buildRecord: typeof contract.buildRecord = (...args) => ({ ...contract.buildRecord(...args), ...probe });
  return { ...contract, buildRecord };
});

const t0 = Date.UTC(2024, 0, 1);

/** One record of each kind, each from the agent code that writes it. */
async function everyProducersRecords(): Promise<SefRecord[]> {
  const ctx: CollectContext = { nowMs: t0, vm, agentVersion: "9.9.9", gapThresholdMs: 10_000, emittedRetentionMs: 1 };
  const { EventStatus: _status, ...fields } = event();
  const collected = applyDocument(
    emptyCollectorState(),
    {
      DocumentIncarnation: 1,
      Events: [{ ...fields, EventStatus: "Scheduled" }],
      Malformed: [{ index: 1, eventId: "B", reason: "resources", problem: "Resources is not an array", raw: {} }],
    },
    ctx,
  );
  const clock = new FakeClock(t0);
  const target = { EventId: "E1", EventType: "Freeze", EventStatus: "Scheduled" as const, DocumentIncarnation: 1 };
  const approval = await attemptApproval([{ ...target, reason: "policy" }], {
    vm,
    mode: "dry-run",
    postStartRequest: () => Promise.reject(new Error("a dry run posts nothing")),
    agentVersion: "9.9.9",
    logger: silentLogger(),
    clock,
  });
  const heartbeats: SefRecord[] = [];
  const beats = startHeartbeats({
    intervalMs: 60_000,
    clock,
    vm,
    agentVersion: "9.9.9",
    stats: () => ({}),
    emit: (r) => void heartbeats.push(r),
  });
  await clock.advance(0);
  await beats.stop("shutdown");
  return [
    ...collected.records,
    ...collected.malformed,
    interruptedHookRecord("notify", transition(), 1, "the agent stopped", t0, "9.9.9"),
    kubernetesRecord({
      vm,
      event: { EventId: "E1", EventType: "Freeze" },
      eventStatus: "Scheduled",
      outcome: "Cordoned",
      detail: { node: "node-1", policy: "drain-then-approve" },
      elapsedMs: 5,
      nowMs: t0,
      agentVersion: "9.9.9",
    }),
    ...approval.records,
    interruptedApprovalRecord(target, vm, "the agent stopped", t0, "9.9.9"),
    ...heartbeats,
  ];
}

describe("the record envelope", () => {
  it("is set by buildRecord on every record of every kind the agent writes", async () => {
    const records = await everyProducersRecords();
    // Every kind is written here (a new kind fails this until its producer is listed above).
    expect(new Set(records.map((r) => r.RecordType))).toEqual(new Set(recordTypes));
    expect(records.map((r) => ("Outcome" in r ? r.Outcome : ""))).toContain("Stopping");
    for (const record of records) {
      expect(record, record.RecordType).toMatchObject({
        ...probe,
        ...vm,
        AgentVersion: "9.9.9",
        TimeGenerated: "2024-01-01T00:00:00.000Z",
        ObservedAt: "2024-01-01T00:00:00.000Z",
      });
    }
  });

  it("is part of every kind's type, and no producer can give a common field itself", () => {
    expectTypeOf<SefRecord>().toExtend<RecordEnvelope>();
    type CommonField = Exclude<keyof RecordEnvelope, "RecordType">;
    expectTypeOf<Extract<keyof RecordFields<TransitionRecord>, CommonField>>().toBeNever();
    const kindFieldsOverlap: {
      [K in SefRecord["RecordType"]]: Extract<keyof RecordFields<Extract<SefRecord, { RecordType: K }>>, CommonField>;
    } = {} as never;
    expectTypeOf(kindFieldsOverlap).toEqualTypeOf<{ [K in SefRecord["RecordType"]]: never }>();
  });
});
