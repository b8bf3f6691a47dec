// The checked-in Bicep schema file (bicep/schema/columns.json), rendered from the record contract.
// `generate.ts` writes it; schema.test.ts fails when the checked-in copy drifts from this rendering.
import { fileURLToPath } from "node:url";
import { recordColumns } from "../../../src/contract/record.js";
import { streamColumns, streamName, tableColumns, tableName } from "../../../src/contract/stream-schema.js";

export const schemaFilePath = fileURLToPath(new URL("../../../bicep/schema/columns.json", import.meta.url));
export const regenerateCommand = "npx tsx test/deploy/generate.ts";

const descriptionOf = new Map(recordColumns.map((c) => [c.name, c.description]));

/** The exact text of bicep/schema/columns.json (2-space JSON, trailing newline). */
export function renderSchemaFile(): string {
  const file = {
    $comment: `Generated from src/contract/record.ts by \`${regenerateCommand}\`. Do not edit by hand.`,
    tableName,
    streamName,
    streamColumns: streamColumns(),
    tableColumns: tableColumns().map((c) => ({ ...c, description: descriptionOf.get(c.name) ?? "" })),
  };
  return `${JSON.stringify(file, null, 2)}\n`;
}
