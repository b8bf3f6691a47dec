// jsonl sink settings (config section `jsonl`): only the shared delivery piece (records per write, linger, an own
// retry policy); the section may be absent or empty (`"jsonl": {}`), any other key in it is an unknown setting.
import * as z from "zod/mini";
import "../../util/zod-locale.js";
import { deliverySettings } from "../delivery-settings.js";

export const jsonlSettingsSchema = z.strictObject({
  ...deliverySettings({
    maxBatchRecords: 1_000,
    lingerMs: 0,
    batchDescription: "Records per write (one `write` of their lines).",
  }),
});
export type JsonlSettings = z.infer<typeof jsonlSettingsSchema>;
