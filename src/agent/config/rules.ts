// Cross-field configuration rules the per-field schema cannot express: sinks listed once and known, the required
// settings of the sinks in use, then each sink's own rules (its factory's `rules`, kept in its settings.ts) and each
// action's (its entry's `rules`). Pure: the parsed config and the environment in, problems out.
import type { AgentConfig } from "./schema.js";
import { actionSection, sinkSection } from "./schema.js";
import { actionEntryList } from "../actions/registry.js";
import { pluginEntries } from "../plugins.js";
import { findSinkFactory, parseSinkSpec, sinkFactories } from "../sinks/registry.js";

/** zod's message, with "expected string, received undefined" said plainly. */
export function describeIssue(issue: { code: string; message: string }): string {
  return issue.code === "invalid_type" && /received undefined$/.test(issue.message)
    ? "required, but not set"
    : issue.message;
}

/** Problems as `field: message` lines; empty when the configuration holds together. */
export function crossFieldProblems(config: AgentConfig, env: NodeJS.ProcessEnv): string[] {
  const problems: string[] = [];
  const used = new Map<string, string | undefined>();
  const seen = new Set<string>();
  config.sinks.forEach((spec, index) => {
    try {
      const { type, argument } = parseSinkSpec(spec);
      if (seen.has(spec)) problems.push(`sinks[${index}]: "${spec}" is listed twice`);
      seen.add(spec);
      if (!used.has(type)) used.set(type, argument);
    } catch (err) {
      problems.push(`sinks[${index}]: ${(err as Error).message}`);
    }
  });

  // A sink in use whose section is absent still needs its required settings.
  for (const type of used.keys()) {
    if (sinkSection(config, type) !== undefined) continue;
    const result = findSinkFactory(type).settingsSchema.safeParse({});
    if (!result.success) {
      for (const issue of result.error.issues)
        problems.push(
          `${[type, ...issue.path.map(String)].join(".")}: ${describeIssue(issue)} (the ${type} sink is in use)`,
        );
    }
  }

  // Each sink's own rules (in the order of their names, the registry's), then each action's (in the order of their sections).
  for (const factory of sinkFactories) {
    const settings = sinkSection(config, factory.section);
    const argument = used.get(factory.section);
    problems.push(...(factory.rules?.({ settings, inUse: used.has(factory.section), argument, env }) ?? []));
  }
  for (const entry of actionEntryList) {
    const settings = actionSection(config, entry.section);
    problems.push(...(entry.rules?.({ settings, inUse: entry.isOn(settings), argument: undefined, env }) ?? []));
  }
  return problems;
}

/**
 * Names of environment variables the configuration itself refers to (credentials, header values), so they are not
 * "unknown"; `merged` is the unvalidated input, each sink reading its own section (any JSON value) as far as it has
 * the right shape.
 */
export function referencedVariables(merged: Record<string, unknown>): string[] {
  return pluginEntries.flatMap((entry) => entry.referencedVariables?.(merged[entry.section]) ?? []);
}
