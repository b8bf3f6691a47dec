// jsonl sink settings: none besides the path in the SPEC (`jsonl:PATH`). The config file may hold an empty `jsonl`
// section (`"jsonl": {}`); any key in it is an unknown setting.
import * as z from "zod/mini";
import "../../util/zod-locale.js";

export const jsonlSettingsSchema = z.strictObject({});
export type JsonlSettings = z.infer<typeof jsonlSettingsSchema>;
