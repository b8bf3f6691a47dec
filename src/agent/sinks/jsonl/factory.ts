// The `--sink jsonl:PATH` factory (the registry's entry for this folder).
import { resolve } from "node:path";
import type { SinkFactory } from "../sink.js";
import { jsonlSettingsSchema, type JsonlSettings } from "./settings.js";
import { JsonlSink } from "./sink.js";

export const sinkFactory: SinkFactory<JsonlSettings> = {
  section: "jsonl",
  summary: "jsonl:PATH — append one JSON record per line to PATH (fsync after each batch)",
  argument: "required",
  settingsSchema: jsonlSettingsSchema,
  settingsDescription:
    "The jsonl sink: the path is the argument of `jsonl:PATH`; the section holds only the shared delivery settings.",
  create: ({ argument, settings, context }) => new JsonlSink(resolve(argument ?? ""), context.logger, settings),
};
