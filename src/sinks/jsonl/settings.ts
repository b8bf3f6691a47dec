// jsonl sink settings: none besides the path in the SPEC (`jsonl:PATH`); the `jsonl` config section must be empty.
import { z } from "zod";

export const jsonlSettingsSchema = z.object({}).strict();
export type JsonlSettings = z.infer<typeof jsonlSettingsSchema>;
