// The action registry: every action's entry (all.ts), in the order of their sections; the configuration schema takes
// each action's section from here, the act stage makes the actions. Adding an action = one folder (its entry, settings
// and action; see actions/README.md) + its line in all.ts.
import type { ActionEntry } from "./action.js";
import * as everyAction from "./all.js";

/** Every action's entry, by section (a module namespace lists its exports sorted by name). */
export const actionEntries = everyAction;

/** The entries as a list, in the order of their sections (the order actions plan, start and stop in). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- heterogeneous settings types
export const actionEntryList: readonly ActionEntry<any>[] = Object.values(everyAction);
