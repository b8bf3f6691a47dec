// jsonl sink settings (config section `jsonl`): only the shared delivery piece (records per write, linger, an own
// retry policy); the section may be absent or empty (`"jsonl": {}`), any other key in it is an unknown setting.
import type * as z from "zod/mini";
import { lineWriterSettingsSchema } from "../delivery-settings.js";

export const jsonlSettingsSchema = lineWriterSettingsSchema(1_000);
export type JsonlSettings = z.infer<typeof jsonlSettingsSchema>;
