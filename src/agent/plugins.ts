// Every plug-in's registry entry, sinks then actions (each in its registry's order), in the one shape they share
// (plugin-entry.ts): what the configuration's schema, rules, variables and secret-file check go through.
import type { PluginEntry } from "./plugin-entry.js";
import { sinkFactories } from "./sinks/registry.js";
import { actionEntryList } from "./actions/registry.js";

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- heterogeneous settings types
export const pluginEntries: readonly PluginEntry<any>[] = [...sinkFactories, ...actionEntryList];
