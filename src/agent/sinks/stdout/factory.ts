// The `--sink stdout` factory (the registry's entry for this folder).
import type { SinkFactory } from "../sink.js";
import { stdoutSettingsSchema, type StdoutSettings } from "./settings.js";
import { StdoutSink } from "./sink.js";

export const sinkFactory: SinkFactory<StdoutSettings> = {
  section: "stdout",
  summary: "stdout — one JSON record per line on standard output",
  argument: "none",
  settingsSchema: stdoutSettingsSchema,
  settingsDescription: "The stdout sink: the section holds only the shared delivery settings.",
  create: ({ settings }) => new StdoutSink(process.stdout, settings),
};
