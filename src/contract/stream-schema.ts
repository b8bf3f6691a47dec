// The Log Analytics shape of the record contract: DCR stream columns, table columns and a row validator,
// all derived from `recordColumns` (record.ts). The Bicep templates, the sink and the local ingestion peer share it.
import { describeValue, typeProblem } from "./column-values.js";
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

/**
 * Checks one row against the stream declaration: every property must be a declared column and its JSON value
 * must fit the column's type (null always fits; undefined properties are skipped, as JSON.stringify drops them).
 * Returns one message per problem; empty when the row is valid.
 */
export function validateRow(row: unknown): string[] {
  if (row === null || typeof row !== "object" || Array.isArray(row))
    return [`row must be a JSON object, got ${describeValue(row)}`];
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
