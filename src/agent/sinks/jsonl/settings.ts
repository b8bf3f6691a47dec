// jsonl sink settings: none besides the path in the SPEC (`jsonl:PATH`); the `jsonl` config section must be empty.
import * as z from "zod/mini";
import "../../util/zod-locale.js";

export const jsonlSettingsSchema = z.strictObject({});
export type JsonlSettings = z.infer<typeof jsonlSettingsSchema>;
