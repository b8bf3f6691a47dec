// stdout sink settings (config section `stdout`): only the shared delivery piece (records per write, linger, an own
// retry policy); the section may be absent or empty (`"stdout": {}`), any other key in it is an unknown setting.
import * as z from "zod/mini";
import "../../util/zod-locale.js";
import { deliverySettings } from "../delivery-settings.js";

export const stdoutSettingsSchema = z.strictObject({
  ...deliverySettings({
    maxBatchRecords: 500,
    lingerMs: 0,
    batchDescription: "Records per write (one `write` of their lines).",
  }),
});
export type StdoutSettings = z.infer<typeof stdoutSettingsSchema>;
