// stdout sink settings: none (the config file's `stdout` section must be empty when present).
import * as z from "zod/mini";
import "../../util/zod-locale.js";

export const stdoutSettingsSchema = z.strictObject({});
export type StdoutSettings = z.infer<typeof stdoutSettingsSchema>;
