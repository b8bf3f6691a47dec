// The DCR stream and table schemas derive from recordColumns, and every record type fits them (schema drift fails here).
import { describe, expect, it } from "vitest";
import { recordColumns, recordTypes } from "../../src/contract/record.js";
import { streamColumns, streamName, tableColumns, tableName, validateRow } from "../../src/contract/stream-schema.js";
import { oneRecordOfEachType, transitionRecord } from "./helpers.js";

describe("stream schema", () => {
  it("declares exactly the contract's columns, in order, with DCR and table type spellings", () => {
    expect(streamName).toBe("Custom-ScheduledEvents");
    expect(tableName).toBe("ScheduledEvents_CL");
    expect(streamColumns().map((c) => c.name)).toEqual(recordColumns.map((c) => c.name));
    expect(tableColumns().map((c) => c.name)).toEqual(recordColumns.map((c) => c.name));
    const dcrTypes = new Set(["string", "int", "long", "real", "boolean", "datetime", "dynamic"]);
    const tableTypes = new Set(["string", "int", "long", "real", "boolean", "dateTime", "dynamic", "guid"]);
    for (const c of streamColumns()) expect(dcrTypes.has(c.type), c.name).toBe(true);
    for (const c of tableColumns()) expect(tableTypes.has(c.type), c.name).toBe(true);
    expect(streamColumns().find((c) => c.name === "TimeGenerated")?.type).toBe("datetime");
    expect(tableColumns().find((c) => c.name === "TimeGenerated")?.type).toBe("dateTime");
    expect(tableColumns().find((c) => c.name === "Resources")?.type).toBe("dynamic");
  });

  it("accepts a fully populated record of every record type", () => {
    const records = oneRecordOfEachType();
    expect(new Set(records.map((r) => r.RecordType))).toEqual(new Set(recordTypes));
    for (const record of records) expect(validateRow(record), record.RecordType).toEqual([]);
  });

  it("names an undeclared column (schema drift)", () => {
    const drifted = { ...transitionRecord(1), MaintenanceWindow: "02:00" };
    expect(validateRow(drifted)).toEqual([
      `column "MaintenanceWindow" is not declared in stream Custom-ScheduledEvents`,
    ]);
  });

  it("checks JSON types against the declared column types", () => {
    expect(validateRow({ RecordId: 5 })[0]).toMatch(/RecordId.*expected a string/);
    expect(validateRow({ AffectsThisVm: "true" })[0]).toMatch(/AffectsThisVm.*expected a boolean/);
    expect(validateRow({ DurationInSeconds: 1.5 })[0]).toMatch(/DurationInSeconds.*expected an integer/);
    expect(validateRow({ DurationInSeconds: 2 ** 31 })[0]).toMatch(/outside the 32-bit range/);
    expect(validateRow({ DurationInSeconds: -(2 ** 31) })).toEqual([]);
    expect(validateRow({ DocumentIncarnation: 2 ** 40 })).toEqual([]);
    expect(validateRow({ DocumentIncarnation: 2.5 })[0]).toMatch(/expected an integer/);
    expect(validateRow({ TimeGenerated: "yesterday" })[0]).toMatch(/not an ISO 8601 date-time/);
    expect(validateRow({ TimeGenerated: 1714564800000 })[0]).toMatch(/expected an ISO 8601 date-time string/);
    expect(validateRow({ TimeGenerated: "2024-05-01T12:00:00+02:00" })).toEqual([]);
    expect(validateRow({ Resources: ["a"], NotBefore: null, Detail: null })).toEqual([]);
    expect(validateRow([1, 2])).toEqual(["row must be a JSON object, got an array"]);
    expect(validateRow(null)).toHaveLength(1);
    expect(validateRow({ RecordId: "x", Detail: undefined })).toEqual([]);
    expect(validateRow({ Resources: () => 1 })[0]).toMatch(/Resources.*expected a JSON value/);
  });
});
