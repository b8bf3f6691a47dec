// The record validator of the contract, built from its columns: every record the agent's collector writes passes it;
// each Transition column is checked for presence (but those older agents lacked), its type, its JSON shape and nulls;
// a wrong status or an empty id is named.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { applyDocument } from "../../src/agent/collector/transitions.js";
import { emptyCollectorState, type CollectorState } from "../../src/agent/collector/state.js";
import type { ImdsEvent } from "../../src/agent/imds/document.js";
import { recordColumns, transitionFieldNames, type TransitionRecord } from "../../src/contract/record.js";
import { transitionProblems, type EarlierAbsentColumn } from "../../src/contract/record-validator.js";
import { transitionRecord } from "../helpers/records.js";
import { propertyParams } from "../helpers/seed.js";

const good = transitionRecord({
  RecordId: "6e9c6a1e-8a4b-8c1d-9f00-000000000001",
  NotBefore: "2026-11-21T10:15:00.000Z",
  Tags: { env: "prod" },
});
const without = (column: string): Record<string, unknown> =>
  Object.fromEntries(Object.entries(good).filter(([name]) => name !== column));

describe("transitionProblems", () => {
  it("passes every Transition the agent's collector writes, whatever the documents", () => {
    const statusArb = fc.constantFrom("Scheduled" as const, "Started" as const);
    const eventArb = fc.record({
      id: fc.constantFrom("A1", "b2", "C3"),
      status: statusArb,
      resources: fc.array(fc.constantFrom("vm-1", "vm-2"), { maxLength: 3 }),
      notBefore: fc.boolean(),
      duration: fc.integer({ min: -1, max: 3600 }),
    });
    fc.assert(
      fc.property(
        fc.array(fc.uniqueArray(eventArb, { selector: (e) => e.id, maxLength: 3 }), { minLength: 1, maxLength: 6 }),
        (documents) => {
          let state: CollectorState = emptyCollectorState();
          const written: TransitionRecord[] = [];
          documents.forEach((events, i) => {
            const imds: ImdsEvent[] = events.map((e) => ({
              EventId: e.id,
              EventStatus: e.status,
              EventType: "Reboot",
              ResourceType: "VirtualMachine",
              Resources: e.resources,
              NotBefore: e.notBefore ? "2026-11-21T10:15:00.000Z" : null,
              Description: "",
              EventSource: "Platform",
              DurationInSeconds: e.duration,
            }));
            const result = applyDocument(
              state,
              { DocumentIncarnation: i + 1, Events: imds },
              {
                nowMs: Date.parse("2026-11-21T10:00:00Z") + i * 1000,
                vm: good,
                agentVersion: "test",
                gapThresholdMs: 10_000,
                emittedRetentionMs: 86_400_000,
              },
            );
            state = result.state;
            written.push(...result.records);
          });
          for (const record of written)
            expect(transitionProblems(record as unknown as Record<string, unknown>)).toEqual([]);
        },
      ),
      propertyParams(3601, 100),
    );
  });

  it("checks every Transition column: missing is a problem, but for the columns older agents did not write", () => {
    expect(transitionProblems(good as unknown as Record<string, unknown>)).toEqual([]);
    const earlierAbsent: EarlierAbsentColumn[] = ["AgentId", "ObservedAt", "Tags"];
    expect(
      recordColumns
        .filter((c) => c.absentInEarlierRecords)
        .map((c) => c.name)
        .sort(),
    ).toEqual(earlierAbsent);
    for (const column of transitionFieldNames) {
      expect(transitionProblems(without(column)), column).toEqual(
        earlierAbsent.includes(column as EarlierAbsentColumn) ? [] : [{ column, problem: "missing" }],
      );
    }
  });

  it("names the column of a wrong type, a wrong JSON shape, a null where none is allowed, a wrong status, an empty id", () => {
    const problemOf = (over: Record<string, unknown>) => transitionProblems({ ...good, ...over });
    expect(problemOf({ Resources: "vm-1" })).toEqual([
      { column: "Resources", problem: "expected an array of strings, got string" },
    ]);
    expect(problemOf({ Resources: ["vm-1", 2] })).toEqual([
      { column: "Resources", problem: "expected an array of strings, got an array" },
    ]);
    expect(problemOf({ Tags: "env:prod" })).toEqual([
      { column: "Tags", problem: "expected an object of strings, got string" },
    ]);
    expect(problemOf({ DurationInSeconds: 1.5 })).toEqual([
      { column: "DurationInSeconds", problem: "expected an integer, got number" },
    ]);
    expect(problemOf({ TimeGenerated: "yesterday" })).toEqual([
      { column: "TimeGenerated", problem: '"yesterday" is not an ISO 8601 date-time' },
    ]);
    expect(problemOf({ VmName: null })).toEqual([{ column: "VmName", problem: "null" }]);
    expect(problemOf({ NotBefore: null })).toEqual([]);
    expect(problemOf({ EventStatus: "Paused" })).toEqual([
      { column: "EventStatus", problem: '"Paused" is not one of "Scheduled", "Started", "Completed", "Canceled"' },
    ]);
    expect(problemOf({ RecordType: "Heartbeat" })).toEqual([
      { column: "RecordType", problem: '"Heartbeat" is not one of "Transition"' },
    ]);
    expect(problemOf({ EventId: "" })).toEqual([{ column: "EventId", problem: "empty" }]);
  });
});
