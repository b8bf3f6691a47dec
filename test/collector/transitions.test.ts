// The collector against the record contract: each rule with plain values, then invariants over random sequences.
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { propertyParams } from "../helpers/seed.js";
import {
  applyDocument,
  applyPollFailure,
  documentHash,
  emittedToRecall,
  malformedKey,
  resumeAfterRestart,
  type CollectContext,
} from "../../src/agent/collector/transitions.js";
import { emptyCollectorState, type CollectorState } from "../../src/agent/collector/state.js";
import {
  MalformedDocumentError,
  parseScheduledEventsDocument,
  type ImdsEvent,
  type ScheduledEventsDocument,
} from "../../src/agent/imds/document.js";
import type { RecordIdentity, TransitionRecord } from "../../src/contract/record.js";
import { deterministicUuid, recordSource, transitionRecordId } from "../../src/contract/record-id.js";

const vm: RecordIdentity = {
  VmName: "WestNO_0",
  VmId: "11111111-2222-3333-4444-555555555555",
  VmResourceId: "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/WestNO_0",
  SubscriptionId: "s",
  ResourceGroup: "rg",
  Location: "westeurope",
  VmScaleSetName: "",
  Zone: "1",
  Tags: { env: "prod" },
  AgentId: "00000000-0000-4000-8000-000000000001",
};
const t0 = Date.parse("2026-11-21T10:00:00Z");
const ctx = (nowMs: number, over: Partial<CollectContext> = {}): CollectContext => ({
  nowMs,
  vm,
  agentVersion: "test",
  gapThresholdMs: 10_000,
  emittedRetentionMs: 7 * 86_400_000,
  ...over,
});

function event(id: string, status: "Scheduled" | "Started", over: Partial<ImdsEvent> = {}): ImdsEvent {
  return {
    EventId: id,
    EventStatus: status,
    EventType: "Freeze",
    ResourceType: "VirtualMachine",
    Resources: ["WestNO_0", "WestNO_1"],
    NotBefore: status === "Scheduled" ? new Date(t0 + 15 * 60_000).toISOString() : null,
    Description: "Host server is undergoing maintenance.",
    EventSource: "Platform",
    DurationInSeconds: 5,
    ...over,
  };
}
const doc = (incarnation: number, ...events: ImdsEvent[]): ScheduledEventsDocument => ({
  DocumentIncarnation: incarnation,
  Events: events,
});

/** Feeds documents one second apart; returns all records and the final state. */
function run(docs: ScheduledEventsDocument[], start: CollectorState = emptyCollectorState(), startMs = t0) {
  let state = start;
  const records: TransitionRecord[] = [];
  docs.forEach((d, i) => {
    const result = applyDocument(state, d, ctx(startMs + i * 1000));
    state = result.state;
    records.push(...result.records);
  });
  return { state, records };
}
const summary = (records: TransitionRecord[]) =>
  records.map((r) => `${r.EventId}:${r.PreviousStatus || "-"}>${r.EventStatus}${r.ObservationGap ? "!" : ""}`);

describe("applyDocument", () => {
  it("follows the documented live migration: Scheduled, Started, then Completed when it disappears", () => {
    const { records } = run([doc(1), doc(2, event("A", "Scheduled")), doc(3, event("A", "Started")), doc(4)]);
    expect(summary(records)).toEqual(["A:->Scheduled", "A:Scheduled>Started", "A:Started>Completed"]);
    expect(records.map((r) => r.DocumentIncarnation)).toEqual([2, 3, 4]);
  });

  it("stamps ObservedAt with the observation time, equal to TimeGenerated", () => {
    const first = applyDocument(emptyCollectorState(), doc(1, event("A", "Scheduled")), ctx(t0));
    expect(first.records.map((r) => [r.TimeGenerated, r.ObservedAt])).toEqual([
      [new Date(t0).toISOString(), new Date(t0).toISOString()],
    ]);
  });

  it("emits Canceled when a Scheduled event disappears without a gap", () => {
    expect(summary(run([doc(1, event("A", "Scheduled")), doc(2)]).records)).toEqual([
      "A:->Scheduled",
      "A:Scheduled>Canceled",
    ]);
  });

  it("emits a direct Started for hardware failure, then Completed", () => {
    expect(summary(run([doc(1), doc(2, event("H", "Started", { EventType: "Reboot" })), doc(3)]).records)).toEqual([
      "H:->Started",
      "H:Started>Completed",
    ]);
  });

  it("does not diff a document with the same incarnation and content", () => {
    const first = applyDocument(emptyCollectorState(), doc(5, event("A", "Scheduled")), ctx(t0));
    const again = applyDocument(first.state, doc(5, event("A", "Scheduled")), ctx(t0 + 1000));
    expect(again.changed).toBe(false);
    expect(again.records).toEqual([]);
    expect(again.state.lastSuccessMs).toBe(t0 + 1000);
  });

  it("diffs a reused incarnation whose content differs (after the 24-hour disable)", () => {
    const first = applyDocument(emptyCollectorState(), doc(1, event("A", "Scheduled")), ctx(t0));
    const reset = applyDocument(first.state, doc(1, event("A", "Scheduled"), event("B", "Scheduled")), ctx(t0 + 1000));
    expect(summary(reset.records)).toEqual(["B:->Scheduled"]);
  });

  it("keeps fields from the event's last sighting on Completed, and the new incarnation", () => {
    const { records } = run([
      doc(1, event("A", "Started", { Description: "last words", DurationInSeconds: 7 })),
      doc(2),
    ]);
    const completed = records.find((r) => r.EventStatus === "Completed")!;
    expect(completed.Description).toBe("last words");
    expect(completed.DurationInSeconds).toBe(7);
    expect(completed.DocumentIncarnation).toBe(2);
  });

  it("sets AffectsThisVm from compute.name, case-insensitively", () => {
    const mine = applyDocument(
      emptyCollectorState(),
      doc(1, event("A", "Scheduled", { Resources: ["westno_0"] })),
      ctx(t0),
    ).records[0]!;
    const neighbour = applyDocument(
      emptyCollectorState(),
      doc(1, event("B", "Scheduled", { Resources: ["WestNO_7"] })),
      ctx(t0),
    ).records[0]!;
    expect(mine.AffectsThisVm).toBe(true);
    expect(neighbour.AffectsThisVm).toBe(false);
  });

  it("gives deterministic RecordIds of (VmId, lower-cased EventId, status)", () => {
    const a = applyDocument(emptyCollectorState(), doc(1, event("AbC", "Scheduled")), ctx(t0)).records[0]!;
    const b = applyDocument(emptyCollectorState(), doc(9, event("abc", "Scheduled")), ctx(t0 + 99_000)).records[0]!;
    expect(a.RecordId).toBe(b.RecordId);
    expect(a.RecordId).toBe(transitionRecordId(recordSource(vm), "abc", "Scheduled"));
    expect(a.RecordId).not.toBe(transitionRecordId(recordSource(vm), "abc", "Started"));
    expect(a.RecordId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it("marks records after failed polls with ObservationGap, and reports an unseen run as Completed", () => {
    const before = applyDocument(
      emptyCollectorState(),
      doc(1, event("A", "Scheduled", { NotBefore: new Date(t0 + 500).toISOString() })),
      ctx(t0),
    );
    const failed = applyPollFailure(before.state);
    const after = applyDocument(failed, doc(3), ctx(t0 + 2000));
    expect(summary(after.records)).toEqual(["A:Scheduled>Completed!"]);
  });

  it("still reports Canceled after a gap when NotBefore has not passed", () => {
    const before = applyDocument(emptyCollectorState(), doc(1, event("A", "Scheduled")), ctx(t0));
    const after = applyDocument(resumeAfterRestart(before.state), doc(2), ctx(t0 + 60_000));
    expect(summary(after.records)).toEqual(["A:Scheduled>Canceled!"]);
  });

  it("treats a long pause between polls and an incarnation going backwards as gaps", () => {
    const before = applyDocument(emptyCollectorState(), doc(7, event("A", "Scheduled")), ctx(t0));
    expect(
      applyDocument(before.state, doc(8, event("A", "Started")), ctx(t0 + 60_000)).records[0]!.ObservationGap,
    ).toBe(true);
    expect(applyDocument(before.state, doc(1, event("A", "Started")), ctx(t0 + 1000)).records[0]!.ObservationGap).toBe(
      true,
    );
    expect(applyDocument(before.state, doc(8, event("A", "Started")), ctx(t0 + 1000)).records[0]!.ObservationGap).toBe(
      false,
    );
  });

  it("emits each (EventId, status) at most once, even if the event comes back", () => {
    const { records } = run([doc(1, event("A", "Started")), doc(2), doc(3, event("A", "Started")), doc(4)]);
    expect(summary(records)).toEqual(["A:->Started", "A:Started>Completed"]);
  });

  it("forgets emitted keys only after the retention has passed since the event ended", () => {
    const { state } = run([doc(1, event("A", "Started")), doc(2)]);
    const sixDays = applyDocument(state, doc(3), ctx(t0 + 6 * 86_400_000));
    expect(sixDays.state.emitted.size).toBe(2);
    const eightDays = applyDocument(state, doc(3), ctx(t0 + 8 * 86_400_000));
    expect(eightDays.state.emitted.size).toBe(0);
  });

  it("never moves an event back from Started to Scheduled", () => {
    const { records, state } = run([doc(1, event("A", "Started")), doc(2, event("A", "Scheduled"))]);
    expect(summary(records)).toEqual(["A:->Started"]);
    expect(state.events.get("a")!.status).toBe("Started");
  });
});

describe("document parsing across api-versions", () => {
  it("normalizes an old document: underscore names, RFC 1123 NotBefore, missing fields", () => {
    const parsed = parseScheduledEventsDocument(
      JSON.stringify({
        DocumentIncarnation: 3,
        Events: [
          {
            EventId: "X",
            EventStatus: "Scheduled",
            EventType: "Reboot",
            ResourceType: "VirtualMachine",
            Resources: ["_mysrv"],
            NotBefore: "Mon, 11 Apr 2022 22:26:58 GMT",
          },
        ],
      }),
    );
    expect(parsed.Events[0]).toEqual({
      EventId: "X",
      EventStatus: "Scheduled",
      EventType: "Reboot",
      ResourceType: "VirtualMachine",
      Resources: ["mysrv"],
      NotBefore: "2022-04-11T22:26:58.000Z",
      Description: "",
      EventSource: "",
      DurationInSeconds: -1,
    });
  });

  it("reads an empty NotBefore of a Started event as null", () => {
    const parsed = parseScheduledEventsDocument(
      JSON.stringify({ DocumentIncarnation: 1, Events: [{ EventId: "X", EventStatus: "Started", NotBefore: "" }] }),
    );
    expect(parsed.Events[0]!.NotBefore).toBeNull();
  });

  it.each([
    ["not JSON", "{"],
    ["no incarnation", '{"Events":[]}'],
    ["no Events", '{"DocumentIncarnation":1}'],
    ["Events not an array", '{"DocumentIncarnation":1,"Events":"none"}'],
  ])("rejects a malformed body (%s) instead of reading it as no events", (_name, body) => {
    expect(() => parseScheduledEventsDocument(body)).toThrow(MalformedDocumentError);
  });

  const good = { EventId: "ok", EventStatus: "Scheduled", EventType: "Reboot", Resources: ["vm"], NotBefore: "" };
  it.each([
    ["unknown status", { EventId: "a", EventStatus: "Done" }, "event_status", "a"],
    ["bad NotBefore", { EventId: "a", EventStatus: "Scheduled", NotBefore: "soon" }, "not_before", "a"],
    ["NotBefore as a number", { EventId: "a", EventStatus: "Scheduled", NotBefore: 5 }, "not_before", "a"],
    [
      "no NotBefore on a Scheduled event",
      { EventId: "a", EventStatus: "Scheduled", Resources: ["vm"] },
      "not_before",
      "a",
    ],
    ["Resources as a string", { EventId: "a", EventStatus: "Scheduled", Resources: "vm" }, "resources", "a"],
    [
      "EventType as a number",
      { EventId: "a", EventStatus: "Scheduled", NotBefore: "", EventType: 7 },
      "field_type",
      "a",
    ],
    ["DurationInSeconds as text", { EventId: "a", EventStatus: "Started", DurationInSeconds: "long" }, "duration", "a"],
    ["no EventId", { EventStatus: "Scheduled" }, "event_id", null],
    ["not an object", "Reboot", "not_an_object", null],
    ["duplicate EventId", { EventId: "OK", EventStatus: "Started" }, "duplicate_event_id", "OK"],
  ])("sets one unreadable event apart (%s) and keeps the valid one", (_name, bad, reason, eventId) => {
    const parsed = parseScheduledEventsDocument(JSON.stringify({ DocumentIncarnation: 1, Events: [good, bad] }));
    expect(parsed.Events.map((e) => e.EventId)).toEqual(["ok"]);
    expect(parsed.Malformed).toEqual([
      { index: 1, eventId, reason, problem: expect.stringMatching(/^Events\[1\]: /) as string, raw: bad },
    ]);
  });

  it("keeps unknown but well-formed values as they are (a new EventType or EventSource)", () => {
    const parsed = parseScheduledEventsDocument(
      JSON.stringify({
        DocumentIncarnation: 1,
        Events: [{ ...good, EventType: "Hibernate", EventSource: "Guest", ResourceType: "Container" }],
      }),
    );
    expect(parsed.Malformed).toBeUndefined();
    expect(parsed.Events[0]).toMatchObject({ EventType: "Hibernate", EventSource: "Guest", ResourceType: "Container" });
  });
});

describe("malformed events in the collector", () => {
  const bad = (id: string | null, raw: Record<string, unknown> = {}) => ({
    index: 9,
    eventId: id,
    reason: "resources" as const,
    problem: "Events[9]: Resources is not an array of strings",
    raw: {
      ...(id === null ? {} : { EventId: id }),
      EventType: "Reboot",
      EventStatus: "Scheduled",
      Resources: "WestNO_0",
      ...raw,
    },
  });
  const withBad = (d: ScheduledEventsDocument, ...m: ReturnType<typeof bad>[]): ScheduledEventsDocument => ({
    ...d,
    Malformed: m,
  });

  it("forwards a malformed event once, with its raw fields, and records the valid events as usual", () => {
    const first = applyDocument(emptyCollectorState(), withBad(doc(1, event("A", "Scheduled")), bad("B")), ctx(t0));
    expect(summary(first.records)).toEqual(["A:->Scheduled"]);
    expect(first.malformed).toHaveLength(1);
    const record = first.malformed[0]!;
    expect(record).toMatchObject({
      RecordType: "MalformedEvent",
      EventId: "B",
      EventStatus: "Scheduled",
      EventType: "Reboot",
      Resources: [],
      Outcome: "resources",
      VmId: vm.VmId,
    });
    expect(JSON.parse(record.Detail)).toEqual({
      problem: "Events[9]: Resources is not an array of strings",
      event: bad("B").raw,
    });
    // Same bad event on the next polls (even in a new incarnation): not forwarded again.
    const again = applyDocument(first.state, withBad(doc(2, event("A", "Started")), bad("B")), ctx(t0 + 1000));
    expect(summary(again.records)).toEqual(["A:Scheduled>Started"]);
    expect(again.malformed).toEqual([]);
    // The same EventId with different raw content is a new malformed record, with another RecordId.
    const changed = applyDocument(
      again.state,
      withBad(doc(3, event("A", "Started")), bad("B", { EventStatus: "Started" })),
      ctx(t0 + 2000),
    );
    expect(changed.malformed).toHaveLength(1);
    expect(changed.malformed[0]!.RecordId).not.toBe(record.RecordId);
  });

  it("does not end a tracked event that became unreadable, nor hide other events' endings", () => {
    const { state } = run([doc(1, event("A", "Started"), event("C", "Scheduled"))]);
    const next = applyDocument(state, withBad(doc(2), bad("A")), ctx(t0 + 1000));
    expect(summary(next.records)).toEqual(["C:Scheduled>Canceled"]);
    expect(next.state.events.get("a")!.status).toBe("Started");
    const healed = applyDocument(next.state, doc(3), ctx(t0 + 2000));
    expect(summary(healed.records)).toEqual(["A:Started>Completed"]);
  });

  it("ends a tracked event gone from the document next to a malformed event without an EventId, whatever its id", () => {
    // An EventId is whatever IMDS sends: a nameless malformed event must not stand in for any of them.
    for (const id of ["A", "Stryker was here"]) {
      const { state } = run([doc(1, event(id, "Started"))]);
      const next = applyDocument(state, withBad(doc(2), bad(null)), ctx(t0 + 1000));
      expect(summary(next.records)).toEqual([`${id}:Started>Completed`]);
    }
  });

  it("counts a document whose only change is a malformed event as changed", () => {
    const first = applyDocument(emptyCollectorState(), doc(1, event("A", "Scheduled")), ctx(t0));
    const next = applyDocument(first.state, withBad(doc(1, event("A", "Scheduled")), bad(null)), ctx(t0 + 1000));
    expect(next.changed).toBe(true);
    expect(next.malformed.map((m) => m.EventId)).toEqual([""]);
  });
});

describe("what the collector stores: stable from release to release", () => {
  const scheduled = (id: string): ImdsEvent =>
    event(id, "Scheduled", {
      EventType: "Reboot",
      Resources: ["WestNO_0"],
      NotBefore: "2026-11-21T10:15:00.000Z",
      Description: "",
      DurationInSeconds: -1,
    });
  const bad = {
    index: 1,
    eventId: "B",
    reason: "resources" as const,
    problem: "p",
    raw: { EventId: "B", Resources: "WestNO_0" },
  };
  const nameless = {
    index: 2,
    eventId: null,
    reason: "event_id" as const,
    problem: "p",
    raw: { EventStatus: "Scheduled" },
  };

  // sef.db keeps the last document's hash and every emitted key: an upgraded agent computing other values would take
  // its first document for a new one, and forward malformed events it already forwarded once more.
  it("hashes a document the same whatever the order of its events and malformed events, and as the releases before", () => {
    expect(documentHash({ DocumentIncarnation: 1, Events: [scheduled("a"), scheduled("_x")] })).toBe(
      "15b5edb4f18f92caf96022b0247df864",
    );
    expect(documentHash({ DocumentIncarnation: 1, Events: [scheduled("_x"), scheduled("a")] })).toBe(
      "15b5edb4f18f92caf96022b0247df864",
    );
    expect(documentHash({ DocumentIncarnation: 1, Events: [scheduled("a")], Malformed: [bad, nameless] })).toBe(
      "6b760535044bdf6ae0b2e30ec74d78d7",
    );
    expect(documentHash({ DocumentIncarnation: 1, Events: [scheduled("a")], Malformed: [nameless, bad] })).toBe(
      "6b760535044bdf6ae0b2e30ec74d78d7",
    );
    expect(malformedKey(bad)).toBe("b|Malformed:044db3907c3b95a6");
    expect(malformedKey(nameless)).toBe("|Malformed:5e8831e6e63d507e");
  });

  it("diffs a document of the same incarnation whose events changed beside an unchanged malformed event", () => {
    const first = applyDocument(
      emptyCollectorState(),
      { DocumentIncarnation: 4, Events: [event("A", "Scheduled")], Malformed: [bad] },
      ctx(t0),
    );
    const next = applyDocument(
      first.state,
      { DocumentIncarnation: 4, Events: [event("A", "Started")], Malformed: [bad] },
      ctx(t0 + 1000),
    );
    expect(summary(next.records)).toEqual(["A:Scheduled>Started"]);
    const otherBad = { ...bad, raw: { EventId: "B", Resources: "WestNO_1" } };
    expect(
      applyDocument(
        next.state,
        { DocumentIncarnation: 4, Events: [event("A", "Started")], Malformed: [otherBad] },
        ctx(t0 + 2000),
      ).changed,
    ).toBe(true);
  });

  it("names the malformed event's record by the VM and its key", () => {
    const result = applyDocument(
      emptyCollectorState(),
      { DocumentIncarnation: 1, Events: [], Malformed: [bad, nameless] },
      ctx(t0),
    );
    expect(result.malformed.map((m) => m.RecordId)).toEqual([
      deterministicUuid("MalformedEvent", recordSource(vm), "b|Malformed:044db3907c3b95a6"),
      deterministicUuid("MalformedEvent", recordSource(vm), "|Malformed:5e8831e6e63d507e"),
    ]);
  });
});

describe("applyDocument: the details", () => {
  it("copies Resources into the record", () => {
    const [record] = applyDocument(
      emptyCollectorState(),
      doc(1, event("A", "Scheduled", { Resources: ["WestNO_3", "WestNO_4"] })),
      ctx(t0),
    ).records;
    expect(record!.Resources).toEqual(["WestNO_3", "WestNO_4"]);
  });

  it("sets AffectsThisVm when any of the Resources is this VM, and never when the VM's name is unknown", () => {
    const affects = (resources: string[], vmName = vm.VmName) =>
      applyDocument(
        emptyCollectorState(),
        doc(1, event("A", "Scheduled", { Resources: resources })),
        ctx(t0, { vm: { ...vm, VmName: vmName } }),
      ).records[0]!.AffectsThisVm;
    expect(affects(["WestNO_7", "WESTNO_0"])).toBe(true);
    expect(affects(["", "WestNO_0"], "")).toBe(false);
  });

  it("is a gap only when the pause between good polls is longer than the threshold", () => {
    const before = applyDocument(emptyCollectorState(), doc(7, event("A", "Scheduled")), ctx(t0));
    expect(
      applyDocument(before.state, doc(8, event("A", "Started")), ctx(t0 + 10_000)).records[0]!.ObservationGap,
    ).toBe(false);
    expect(
      applyDocument(before.state, doc(8, event("A", "Started")), ctx(t0 + 10_001)).records[0]!.ObservationGap,
    ).toBe(true);
  });

  it("takes an unchanged document as a good poll: a failure before it is no gap for the next change", () => {
    const first = applyDocument(emptyCollectorState(), doc(5, event("A", "Scheduled")), ctx(t0));
    const same = applyDocument(applyPollFailure(first.state), doc(5, event("A", "Scheduled")), ctx(t0 + 1000));
    expect(same.changed).toBe(false);
    expect(same.state.interrupted).toBe(false);
    expect(applyDocument(same.state, doc(6, event("A", "Started")), ctx(t0 + 2000)).records[0]!.ObservationGap).toBe(
      false,
    );
  });

  it("takes the same events in a new incarnation as a change (the incarnation is kept)", () => {
    const first = applyDocument(emptyCollectorState(), doc(5, event("A", "Scheduled")), ctx(t0));
    const next = applyDocument(first.state, doc(6, event("A", "Scheduled")), ctx(t0 + 1000));
    expect(next.changed).toBe(true);
    expect(next.records).toEqual([]);
    expect(next.state.lastIncarnation).toBe(6);
  });

  it("keeps a Scheduled event Scheduled while it stays so, and cancels it when it goes", () => {
    const { records, state } = run([
      doc(1, event("A", "Scheduled")),
      doc(2, event("A", "Scheduled"), event("B", "Started")),
      doc(3, event("B", "Started")),
    ]);
    expect(summary(records)).toEqual(["A:->Scheduled", "B:->Started", "A:Scheduled>Canceled"]);
    expect(state.events.get("b")!.status).toBe("Started");
  });

  it("without a gap, a Scheduled event that goes is Canceled even past its NotBefore; after a gap, Completed from NotBefore on", () => {
    const notBefore = new Date(t0 + 500).toISOString();
    const seen = applyDocument(
      emptyCollectorState(),
      doc(1, event("A", "Scheduled", { NotBefore: notBefore })),
      ctx(t0),
    );
    expect(summary(applyDocument(seen.state, doc(2), ctx(t0 + 1000)).records)).toEqual(["A:Scheduled>Canceled"]);
    const atNotBefore = applyDocument(applyPollFailure(seen.state), doc(2), ctx(t0 + 500));
    expect(summary(atNotBefore.records)).toEqual(["A:Scheduled>Completed!"]);
  });

  it("takes the valid copy of an EventId listed twice (the second copy set apart as malformed)", () => {
    const seen = applyDocument(emptyCollectorState(), doc(1, event("A", "Scheduled")), ctx(t0));
    const duplicate = {
      index: 1,
      eventId: "A",
      reason: "duplicate_event_id" as const,
      problem: "p",
      raw: { EventId: "A", EventStatus: "Scheduled" },
    };
    const next = applyDocument(
      seen.state,
      { ...doc(2, event("A", "Started")), Malformed: [duplicate] },
      ctx(t0 + 1000),
    );
    expect(summary(next.records)).toEqual(["A:Scheduled>Started"]);
    expect(next.state.events.get("a")!.status).toBe("Started");
  });

  it("ends every key of an event that went, so that all of them expire with it, and none of an event still listed", () => {
    const { state } = run([doc(1, event("A", "Scheduled"), event("B", "Scheduled")), doc(2, event("B", "Scheduled"))]);
    expect([...state.emitted].map(([key, e]) => [key, e.endedMs])).toEqual([
      ["a|Scheduled", t0 + 1000],
      ["b|Scheduled", null],
      ["a|Canceled", t0 + 1000],
    ]);
    expect(
      [...applyDocument(state, doc(3, event("B", "Scheduled")), ctx(t0 + 1000 + 7 * 86_400_000 + 1)).state.emitted].map(
        ([key]) => key,
      ),
    ).toEqual(["b|Scheduled"]);
  });

  it("keeps emitted keys at least 7 days, whatever a shorter retention says", () => {
    const { state } = run([doc(1, event("A", "Started")), doc(2)]);
    const short = (days: number) =>
      applyDocument(state, doc(3), ctx(t0 + days * 86_400_000, { emittedRetentionMs: 86_400_000 })).state.emitted.size;
    expect(short(2)).toBe(2);
    expect(short(6)).toBe(2);
    expect(short(8)).toBe(0);
  });

  it("recalls the keys of the document's untracked EventIds (lower-cased) and of its malformed events without one", () => {
    const { state } = run([doc(1, event("A", "Scheduled"))]);
    const nameless = {
      index: 3,
      eventId: null,
      reason: "event_id" as const,
      problem: "p",
      raw: { EventType: "Reboot" },
    };
    const named = { index: 4, eventId: "Cc", reason: "resources" as const, problem: "p", raw: { EventId: "Cc" } };
    const tracked = { index: 5, eventId: "a", reason: "resources" as const, problem: "p", raw: { EventId: "a" } };
    const recall = emittedToRecall(state, {
      ...doc(2, event("A", "Started"), event("Bb", "Scheduled")),
      Malformed: [nameless, named, tracked],
    });
    expect(recall).toEqual({ eventIds: ["bb", "cc"], keys: [malformedKey(nameless)] });
  });

  it("fills a malformed event's record from the raw fields of the right type, Resources only when all are strings", () => {
    const record = (raw: unknown) =>
      applyDocument(
        emptyCollectorState(),
        {
          DocumentIncarnation: 1,
          Events: [],
          Malformed: [{ index: 0, eventId: "M", reason: "field_type" as const, problem: "p", raw }],
        },
        ctx(t0),
      ).malformed[0]!;
    const full = {
      EventId: "M",
      EventStatus: "Scheduled",
      EventType: "Reboot",
      ResourceType: "VirtualMachine",
      Resources: ["_WestNO_0"],
      Description: "d",
      EventSource: "User",
      NotBefore: 5,
    };
    expect(record(full)).toMatchObject({
      EventStatus: "Scheduled",
      EventType: "Reboot",
      ResourceType: "VirtualMachine",
      Resources: ["WestNO_0"],
      Description: "d",
      EventSource: "User",
      AffectsThisVm: true,
    });
    expect(record({ ...full, EventType: 7, Resources: ["WestNO_0", 3] })).toMatchObject({
      EventType: "",
      Resources: [],
      AffectsThisVm: false,
    });
    for (const raw of ["Reboot", ["EventType", "Reboot"], null]) {
      expect(record(raw)).toMatchObject({
        EventStatus: "",
        EventType: "",
        ResourceType: "",
        Resources: [],
        Description: "",
        EventSource: "",
      });
    }
  });
});

describe("invariants over random document sequences", () => {
  type Step =
    | { kind: "doc"; events: Array<{ id: string; status: "Scheduled" | "Started" }> }
    | { kind: "fail" }
    | { kind: "restart" };
  const idArb = fc.constantFrom("e1", "e2", "E3", "e4");
  const stepArb: fc.Arbitrary<Step> = fc.oneof(
    {
      weight: 6,
      arbitrary: fc
        .uniqueArray(fc.record({ id: idArb, status: fc.constantFrom("Scheduled" as const, "Started" as const) }), {
          selector: (e) => e.id.toLowerCase(),
          maxLength: 3,
        })
        .map((events) => ({ kind: "doc" as const, events })),
    },
    { weight: 2, arbitrary: fc.constant({ kind: "fail" as const }) },
    { weight: 1, arbitrary: fc.constant({ kind: "restart" as const }) },
  );

  /**
   * `adopt`: settle each document's emitted keys into the shared map as the agent does once they are committed;
   * `stepMs`: time between steps (days, for keys to expire).
   */
  function simulate(steps: Step[], adopt = false, stepMs = 1000) {
    let state = emptyCollectorState();
    let incarnation = 0;
    let nowMs = t0;
    const records: TransitionRecord[] = [];
    /** The state before and after each failed poll or restart. */
    const interruptions: Array<{ before: CollectorState; after: CollectorState }> = [];
    for (const step of steps) {
      nowMs += stepMs;
      if (step.kind === "doc") {
        incarnation += 1;
        const result = applyDocument(
          state,
          doc(incarnation, ...step.events.map((e) => event(e.id, e.status))),
          ctx(nowMs),
        );
        if (adopt && result.changed) result.state.emitted.settle();
        state = result.state;
        records.push(...result.records);
      } else {
        const after = step.kind === "fail" ? applyPollFailure(state) : resumeAfterRestart(state);
        interruptions.push({ before: state, after });
        state = after;
      }
    }
    return { records, interruptions, emitted: new Map(state.emitted) };
  }

  it("concludes the same when each state's emitted keys are settled in place, as the agent adopts them", () => {
    fc.assert(
      fc.property(fc.array(stepArb, { maxLength: 30 }), (steps) => {
        for (const stepMs of [1000, 2 * 86_400_000]) {
          const pure = simulate(steps, false, stepMs);
          const adopted = simulate(steps, true, stepMs);
          expect(adopted.records).toEqual(pure.records);
          expect(adopted.emitted).toEqual(pure.emitted);
        }
      }),
      propertyParams(3101, 100),
    );
  });

  it("emits at most one record per (EventId, status)", () => {
    fc.assert(
      fc.property(fc.array(stepArb, { maxLength: 30 }), (steps) => {
        const keys = simulate(steps).records.map((r) => `${r.EventId.toLowerCase()}|${r.EventStatus}`);
        expect(new Set(keys).size).toBe(keys.length);
      }),
      propertyParams(3102, 100),
    );
  });

  it("never emits Completed or Canceled without a prior sighting of the event", () => {
    fc.assert(
      fc.property(fc.array(stepArb, { maxLength: 30 }), (steps) => {
        const seen = new Set<string>();
        for (const r of simulate(steps).records) {
          const id = r.EventId.toLowerCase();
          if (r.EventStatus === "Completed" || r.EventStatus === "Canceled") expect(seen.has(id)).toBe(true);
          else seen.add(id);
        }
      }),
      propertyParams(3103, 100),
    );
  });

  it("a failed poll or a restart forgets and ends nothing: it only marks the state interrupted", () => {
    fc.assert(
      fc.property(fc.array(stepArb, { maxLength: 30 }), (steps) => {
        for (const { before, after } of simulate(steps).interruptions) {
          expect(after.interrupted).toBe(true);
          expect({ ...after, interrupted: before.interrupted }).toEqual(before);
        }
      }),
      propertyParams(3104, 100),
    );
  });

  it("marks the first records after a failure or restart with ObservationGap", () => {
    fc.assert(
      fc.property(fc.array(stepArb, { maxLength: 30 }), (steps) => {
        const { records } = simulate(steps);
        // Replay: any record produced by the first document after a fail/restart (with a success before) has a gap.
        let state = emptyCollectorState();
        let incarnation = 0;
        let nowMs = t0;
        let interruptedSinceSuccess = false;
        let i = 0;
        for (const step of steps) {
          nowMs += 1000;
          if (step.kind !== "doc") {
            state = step.kind === "fail" ? applyPollFailure(state) : resumeAfterRestart(state);
            if (state.lastSuccessMs !== null) interruptedSinceSuccess = true;
            continue;
          }
          incarnation += 1;
          const result = applyDocument(
            state,
            doc(incarnation, ...step.events.map((e) => event(e.id, e.status))),
            ctx(nowMs),
          );
          for (const r of result.records) expect(r.ObservationGap).toBe(interruptedSinceSuccess);
          i += result.records.length;
          interruptedSinceSuccess = false;
          state = result.state;
        }
        expect(i).toBe(records.length);
      }),
      propertyParams(3105, 100),
    );
  });
});
