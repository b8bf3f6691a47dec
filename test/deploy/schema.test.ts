// The checked-in Bicep schema file (table columns and DCR stream declaration) equals the record contract, and the
// KQL rendering of the contract (used to check queries) has every column with the right Kusto type.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { kustoColumns, kustoCreateTableCommand, kustoTableSchema } from "../../src/contract/kusto-schema.js";
import { recordColumns } from "../../src/contract/record.js";
import { streamName, tableName } from "../../src/contract/stream-schema.js";
import { regenerateCommand, renderSchemaFile, schemaFilePath } from "./support/schema-file.js";

interface SchemaFile {
  tableName: string;
  streamName: string;
  streamColumns: { name: string; type: string }[];
  tableColumns: { name: string; type: string; description: string }[];
}

const checkedIn = readFileSync(schemaFilePath, "utf8");

describe("bicep/schema/columns.json", () => {
  it(`is up to date with src/contract (regenerate with: ${regenerateCommand})`, () => {
    expect(checkedIn, `bicep/schema/columns.json drifted from src/contract; run: ${regenerateCommand}`).toBe(
      renderSchemaFile(),
    );
  });

  it("declares the contract's columns, in order, for both the stream and the table", () => {
    const file = JSON.parse(checkedIn) as SchemaFile;
    expect(file.tableName).toBe(tableName);
    expect(file.streamName).toBe(streamName);
    expect(file.streamColumns).toEqual(recordColumns.map((c) => ({ name: c.name, type: c.type })));
    expect(file.tableColumns.map((c) => c.name)).toEqual(recordColumns.map((c) => c.name));
    const tableTypes: Record<string, string> = { datetime: "dateTime" };
    for (const [i, c] of recordColumns.entries()) {
      expect(file.tableColumns[i]?.type, c.name).toBe(tableTypes[c.type] ?? c.type);
      expect(file.tableColumns[i]?.description, c.name).toBe(c.description);
    }
    expect(file.tableColumns[0]?.name).toBe("TimeGenerated");
  });
});

describe("kusto-schema", () => {
  it("maps every contract type to a KQL type", () => {
    const types = Object.fromEntries(kustoColumns().map((c) => [c.name, c.type]));
    expect(types).toMatchObject({
      TimeGenerated: "datetime",
      ObservedAt: "datetime",
      Resources: "dynamic",
      DurationInSeconds: "int",
      DocumentIncarnation: "long",
      AffectsThisVm: "bool",
      ObservationGap: "bool",
      RecordType: "string",
      ElapsedMs: "long",
    });
    expect(kustoColumns()).toHaveLength(recordColumns.length);
  });

  it("renders the schema and an ADX create command", () => {
    expect(kustoTableSchema()).toMatch(
      /^\(TimeGenerated:datetime, ObservedAt:datetime, RecordId:string, .*Detail:string\)$/,
    );
    expect(kustoCreateTableCommand()).toBe(`.create-merge table ScheduledEvents_CL ${kustoTableSchema()}`);
  });
});
