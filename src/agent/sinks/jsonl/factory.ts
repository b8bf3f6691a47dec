// The `--sink jsonl:PATH` factory (the registry's entry for this folder).
import { resolve } from "node:path";
import type { SinkFactory } from "../sink.js";
import { jsonlSettingsSchema, type JsonlSettings } from "./settings.js";
import { JsonlSink } from "./sink.js";

export const sinkFactory: SinkFactory<JsonlSettings> = {
  type: "jsonl",
  summary: "jsonl:PATH — append one JSON record per line to PATH (fsync after each batch)",
  argument: "required",
  settingsSchema: jsonlSettingsSchema,
  settingsDescription:
    "The jsonl sink takes no settings besides the path in `jsonl:PATH`: the section, when given, is empty.",
  create: ({ argument, context }) => new JsonlSink(resolve(argument ?? ""), context.logger),
};
