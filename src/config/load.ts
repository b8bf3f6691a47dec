// Builds the configuration from defaults < JSON file < SEF_* environment variables < command-line flags,
// validates it once, and reports every bad field by name.
import { readFileSync } from "node:fs";
import { z } from "zod";
import { agentConfigSchema, type AgentConfig } from "./schema.js";
import { findSinkFactory, parseSinkSpec, sinkFactories } from "../sinks/registry.js";

export class ConfigError extends Error {
  override readonly name = "ConfigError";
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
  }
}

/** Environment variables the agent reads, and the config field each one sets. */
export const environmentVariables: Record<string, { field: string; kind: "string" | "number" | "list" }> = {
  SEF_CONFIG: { field: "(config file path)", kind: "string" },
  SEF_IMDS_URL: { field: "imdsUrl", kind: "string" },
  SEF_API_VERSION: { field: "apiVersion", kind: "string" },
  SEF_POLL_INTERVAL_MS: { field: "pollIntervalMs", kind: "number" },
  SEF_DATA_DIR: { field: "dataDir", kind: "string" },
  SEF_SINKS: { field: "sinks", kind: "list" },
  SEF_LOG_LEVEL: { field: "logLevel", kind: "string" },
  SEF_HEARTBEAT_INTERVAL_MS: { field: "heartbeatIntervalMs", kind: "number" },
  SEF_SHUTDOWN_FLUSH_MS: { field: "shutdownFlushMs", kind: "number" },
  SEF_METRICS_PORT: { field: "metricsPort", kind: "number" },
};

export interface ConfigSources {
  /** Path of the JSON config file, if any. */
  file?: string;
  /** Flag values already mapped to config field names (undefined = not given). */
  flags?: Record<string, unknown>;
  env?: NodeJS.ProcessEnv;
}

/** Settings validated per configured sink, keyed by sink type. */
export interface LoadedConfig {
  config: AgentConfig;
  sinkSettings: Record<string, unknown>;
}

export function loadConfig(sources: ConfigSources): LoadedConfig {
  const env = sources.env ?? process.env;
  const problems: string[] = [];
  const merged: Record<string, unknown> = {};

  const file = sources.file ?? env.SEF_CONFIG;
  if (file) Object.assign(merged, readConfigFile(file, problems));
  for (const [name, { field, kind }] of Object.entries(environmentVariables)) {
    const raw = env[name];
    if (raw === undefined || raw === "" || name === "SEF_CONFIG") continue;
    if (kind === "number") {
      const n = Number(raw);
      if (!Number.isFinite(n)) problems.push(`${name}: expected a number, got "${raw}"`);
      else merged[field] = n;
    } else if (kind === "list") {
      merged[field] = raw.split(",").map((s) => s.trim()).filter(Boolean);
    } else {
      merged[field] = raw;
    }
  }
  for (const [field, value] of Object.entries(sources.flags ?? {})) if (value !== undefined) merged[field] = value;

  const parsed = agentConfigSchema.safeParse(merged);
  if (!parsed.success) {
    problems.push(...formatIssues(parsed.error));
    throw new ConfigError(problems);
  }
  const config = parsed.data;
  const knownSections = new Set(sinkFactories.map((f) => f.type));
  const knownKeys = new Set(Object.keys(agentConfigSchema.shape));
  for (const key of Object.keys(config)) {
    if (!knownKeys.has(key) && !knownSections.has(key) && !extraSections.has(key)) problems.push(`${key}: unknown setting`);
  }

  const sinkSettings: Record<string, unknown> = {};
  const seenNames = new Set<string>();
  config.sinks.forEach((spec, index) => {
    let type: string;
    try {
      type = parseSinkSpec(spec).type;
    } catch (err) {
      problems.push(`sinks[${index}]: ${(err as Error).message}`);
      return;
    }
    if (seenNames.has(spec)) problems.push(`sinks[${index}]: "${spec}" is listed twice`);
    seenNames.add(spec);
    if (type in sinkSettings) return;
    const result = findSinkFactory(type).settingsSchema.safeParse((config as Record<string, unknown>)[type] ?? {});
    if (result.success) sinkSettings[type] = result.data;
    else problems.push(...formatIssues(result.error, type));
  });
  if (problems.length > 0) throw new ConfigError(problems);
  return { config, sinkSettings };
}

/** Config sections owned by other modules (validated where they are used). */
const extraSections = new Set<string>(["approval", "hooks", "metrics", "readiness"]);

/** Registers a config section validated by another module (approval, hooks, metrics). */
export function parseSection<T>(config: AgentConfig, section: string, schema: z.ZodType<T>): T {
  const result = schema.safeParse((config as Record<string, unknown>)[section] ?? undefined);
  if (!result.success) throw new ConfigError(formatIssues(result.error, section));
  return result.data;
}

function readConfigFile(path: string, problems: string[]): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    problems.push(`config file ${path}: cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
    return {};
  }
  try {
    const json = JSON.parse(text) as unknown;
    if (typeof json !== "object" || json === null || Array.isArray(json)) {
      problems.push(`config file ${path}: must hold a JSON object`);
      return {};
    }
    return json as Record<string, unknown>;
  } catch (err) {
    problems.push(`config file ${path}: not valid JSON (${(err as Error).message})`);
    return {};
  }
}

function formatIssues(error: z.ZodError, prefix?: string): string[] {
  return error.issues.map((issue) => {
    const path = [prefix, ...issue.path.map(String)].filter((p) => p !== undefined && p !== "").join(".");
    return `${path || "(root)"}: ${issue.message}`;
  });
}
