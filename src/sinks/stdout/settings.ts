// stdout sink settings: none (the config file's `stdout` section must be empty when present).
import { z } from "zod";

export const stdoutSettingsSchema = z.object({}).strict();
export type StdoutSettings = z.infer<typeof stdoutSettingsSchema>;
