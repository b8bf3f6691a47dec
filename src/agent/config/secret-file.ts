// Warns when the config file holds a secret (a connection string, a literal credential header) but other users of the
// machine may read it. Pure check plus one stat; the caller logs the warning.
import { statSync } from "node:fs";
import { sinkSection, type AgentConfig } from "./schema.js";
import { pluginEntries } from "../plugins.js";

/** Names of the settings in `config` that hold a secret inline (not by variable name), as each plug-in tells. */
export function inlineSecrets(config: AgentConfig): string[] {
  return pluginEntries.flatMap((entry) => {
    const section = sinkSection(config, entry.section);
    return section === undefined ? [] : (entry.inlineSecrets?.(section) ?? []);
  });
}

/** A warning when `file` holds a secret and is readable by others (mode o+r); undefined otherwise or on Windows. */
export function secretFileWarning(
  file: string | undefined,
  config: AgentConfig,
  platform = process.platform,
): { file: string; mode: string; settings: string[] } | undefined {
  if (file === undefined || platform === "win32") return undefined;
  const settings = inlineSecrets(config);
  if (settings.length === 0) return undefined;
  const mode = statSync(file).mode & 0o777;
  if ((mode & 0o004) === 0) return undefined;
  return { file, mode: mode.toString(8).padStart(4, "0"), settings };
}
