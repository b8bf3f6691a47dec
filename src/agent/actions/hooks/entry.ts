// The hooks action's registry entry: section `hooks` (hooks.ts), rows of kind `hook`.
import type { TransitionRecord } from "@sef/contract/record.js";
import type { ActionEntry } from "../action.js";
import { hookEnvironment, hooksConfigSchema, type HooksConfig } from "./hooks.js";

export const actionEntry: ActionEntry<HooksConfig> = {
  section: "hooks",
  kind: "hook",
  settingsSchema: hooksConfigSchema,
  settingsDescription: "Commands run on transitions: see src/agent/actions/README.md.",
  isOn: (hooks) => hooks.length > 0,
  referencedVariables: () => Object.keys(hookEnvironment({ Resources: [] } as unknown as TransitionRecord, "")),
  async create(hooks, context) {
    const { HooksAction } = await import("./action.js");
    return new HooksAction(hooks, context);
  },
};
