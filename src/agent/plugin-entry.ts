// The one shape of a plug-in's registry entry, shared by sinks (sinks/registry.ts) and actions (actions/registry.ts):
// its configuration section, the section's schema and line in the reference, its cross-field rules, the environment
// variables it names and the settings that hold a secret inline. Each kind adds only how it is made.
import type * as z from "zod/mini";

/** What a plug-in's cross-field rules judge. */
export interface PluginRulesInput<Settings> {
  /** The validated section (with its defaults), or undefined when the config has none and the schema gives none. */
  readonly settings: Settings | undefined;
  /** Whether the configuration uses the plug-in: a `sinks` entry names the sink; the action's settings turn it on. */
  readonly inUse: boolean;
  /** A sink's SPEC argument of its first `sinks` entry (`webhook:URL` → URL); undefined for an action. */
  readonly argument: string | undefined;
  readonly env: NodeJS.ProcessEnv;
}

export interface PluginEntry<Settings = unknown> {
  /**
   * The configuration section holding its settings, and the name it is exported under in its `all.ts` (a sink's
   * `--sink` type, an action's section).
   */
  readonly section: string;
  /** Validates the section; defaults belong here. The configuration schema takes it from the registry. */
  readonly settingsSchema: z.ZodMiniType<Settings>;
  /** The section's line in the configuration reference (where its settings are described). */
  readonly settingsDescription: string;
  /** Cross-field rules the schema cannot express (pure): problems as `field: message` lines. */
  readonly rules?: (input: PluginRulesInput<Settings>) => string[];
  /**
   * Environment variables it names (credentials, header values, the ones it gives the processes it starts), read from
   * the unvalidated section (any JSON value, or undefined when absent) as far as it has the right shape, so that
   * `sef check-config` does not report them as unknown.
   */
  readonly referencedVariables?: (section: unknown) => readonly string[];
  /** Names of the settings of the section that hold a secret inline (the config-file permission warning). */
  readonly inlineSecrets?: (settings: Settings) => string[];
}
