// stdout sink settings (config section `stdout`): only the shared delivery piece (records per write, linger, an own
// retry policy); the section may be absent or empty (`"stdout": {}`), any other key in it is an unknown setting.
import type * as z from "zod/mini";
import { lineWriterSettingsSchema } from "../delivery-settings.js";

export const stdoutSettingsSchema = lineWriterSettingsSchema(500);
export type StdoutSettings = z.infer<typeof stdoutSettingsSchema>;
