// The Log Analytics shape of the record contract: DCR stream columns, table columns and a row validator,
// all derived from `recordColumns` (record.ts). The Bicep templates, the sink and the local ingestion peer share it.
import { recordColumns, type ColumnType } from "./record.js";

/** The DCR stream the sink posts to (stream declarations of custom streams start with `Custom-`). */
export const streamName = "Custom-ScheduledEvents";
/** The custom Log Analytics table the DCR routes the stream to. */
export const tableName = "ScheduledEvents_CL";

/** DCR stream declarations spell `datetime`; Log Analytics table schemas spell `dateTime`. */
const tableTypeOf: Readonly<Record<ColumnType, string>> = {
  string: "string",
  int: "int",
  long: "long",
  real: "real",
  boolean: "boolean",
  datetime: "dateTime",
  dynamic: "dynamic",
};

/** Columns of the DCR stream declaration, in table order. */
export function streamColumns(): { name: string; type: string }[] {
  return recordColumns.map((c) => ({ name: c.name, type: c.type }));
}

/** Columns of the Log Analytics table, in table order. */
export function tableColumns(): { name: string; type: string }[] {
  return recordColumns.map((c) => ({ name: c.name, type: tableTypeOf[c.type] }));
}

const columnTypeByName: ReadonlyMap<string, ColumnType> = new Map(recordColumns.map((c) => [c.name, c.type]));

/** ISO 8601 date-time with an explicit offset or Z (what the agent writes), e.g. 2024-05-01T12:00:00.000Z. */
const isoDateTime = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;

const int32Min = -2_147_483_648;
const int32Max = 2_147_483_647;

/** Why `value` does not fit a column of `type`, or undefined when it does (null always fits). */
function typeProblem(type: ColumnType, value: unknown): string | undefined {
  if (value === null) return undefined;
  switch (type) {
    case "string":
      return typeof value === "string" ? undefined : `expected a string, got ${describe(value)}`;
    case "boolean":
      return typeof value === "boolean" ? undefined : `expected a boolean, got ${describe(value)}`;
    case "real":
      return typeof value === "number" && Number.isFinite(value) ? undefined : `expected a number, got ${describe(value)}`;
    case "int":
      if (typeof value !== "number" || !Number.isInteger(value)) return `expected an integer, got ${describe(value)}`;
      return value >= int32Min && value <= int32Max ? undefined : `integer ${value} is outside the 32-bit range`;
    case "long":
      return typeof value === "number" && Number.isSafeInteger(value) ? undefined : `expected an integer, got ${describe(value)}`;
    case "datetime":
      if (typeof value !== "string") return `expected an ISO 8601 date-time string, got ${describe(value)}`;
      return isoDateTime.test(value) && !Number.isNaN(Date.parse(value)) ? undefined : `"${value}" is not an ISO 8601 date-time`;
    case "dynamic":
      return typeof value === "function" || typeof value === "symbol" || typeof value === "bigint"
        ? `expected a JSON value, got ${describe(value)}`
        : undefined;
  }
}

function describe(value: unknown): string {
  if (Array.isArray(value)) return "an array";
  if (typeof value === "number" && !Number.isFinite(value)) return String(value);
  return typeof value === "object" ? "an object" : typeof value;
}

/**
 * Checks one row against the stream declaration: every property must be a declared column and its JSON value
 * must fit the column's type (null always fits; undefined properties are skipped, as JSON.stringify drops them).
 * Returns one message per problem; empty when the row is valid.
 */
export function validateRow(row: unknown): string[] {
  if (row === null || typeof row !== "object" || Array.isArray(row)) return [`row must be a JSON object, got ${describe(row)}`];
  const problems: string[] = [];
  for (const name in row) {
    if (!Object.hasOwn(row, name)) continue;
    const value: unknown = (row as Record<string, unknown>)[name];
    if (value === undefined) continue; // not serialized: absent from the JSON row
    const type = columnTypeByName.get(name);
    if (type === undefined) {
      problems.push(`column "${name}" is not declared in stream ${streamName}`);
      continue;
    }
    const problem = typeProblem(type, value);
    if (problem !== undefined) problems.push(`column "${name}" (${type}): ${problem}`);
  }
  return problems;
}
