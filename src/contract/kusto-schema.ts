// The Kusto (KQL) shape of the record contract: column types as the query language spells them, derived from
// `recordColumns`. Used to check the KQL library and alert queries offline and to create the table in Azure Data Explorer.
import { recordColumns, type ColumnType } from "./record.js";
import { tableName } from "./stream-schema.js";

/** KQL scalar type names (`bool`, not `boolean`; `datetime` in any case). */
const kustoTypeOf: Readonly<Record<ColumnType, string>> = {
  string: "string",
  int: "int",
  long: "long",
  real: "real",
  boolean: "bool",
  datetime: "datetime",
  dynamic: "dynamic",
};

/** Columns of the table as KQL sees them, in table order. */
export function kustoColumns(): { name: string; type: string }[] {
  return recordColumns.map((c) => ({ name: c.name, type: kustoTypeOf[c.type] }));
}

/** The table schema in KQL syntax, e.g. `(TimeGenerated:datetime, RecordId:string, ...)`. */
export function kustoTableSchema(): string {
  return `(${kustoColumns()
    .map((c) => `${c.name}:${c.type}`)
    .join(", ")})`;
}

/** An Azure Data Explorer command that creates (or extends) the table with the contract's columns. */
export function kustoCreateTableCommand(name: string = tableName): string {
  return `.create-merge table ${name} ${kustoTableSchema()}`;
}
