// stdout sink settings: none. The config file may hold an empty `stdout` section (`"stdout": {}`); any key in it is
// an unknown setting.
import * as z from "zod/mini";
import "../../util/zod-locale.js";

export const stdoutSettingsSchema = z.strictObject({});
export type StdoutSettings = z.infer<typeof stdoutSettingsSchema>;
