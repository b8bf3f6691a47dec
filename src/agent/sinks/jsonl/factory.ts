// The `--sink jsonl:PATH` factory (the registry's entry for this folder).
import { resolve } from "node:path";
import type { SinkFactory } from "../sink.js";
import { jsonlSettingsSchema, type JsonlSettings } from "./settings.js";
import { JsonlSink } from "./sink.js";

export const jsonlSinkFactory: SinkFactory<JsonlSettings> = {
  type: "jsonl",
  summary: "jsonl:PATH — append one JSON record per line to PATH (fsync after each batch)",
  argument: "required",
  settingsSchema: jsonlSettingsSchema,
  create: ({ argument, context }) => new JsonlSink(resolve(argument ?? ""), context.logger),
};
