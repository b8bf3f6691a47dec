// Builds the configuration from defaults < JSON file < SEF_* environment variables < command-line flags, validates
// it once with one schema plus the cross-field rules, and reports every problem as one line naming the setting.
import { readFileSync } from "node:fs";
import type * as z from "zod/mini";
import { agentConfigSchema, sinkSection, type AgentConfig } from "./schema.js";
import { crossFieldProblems, describeIssue, referencedVariables } from "./rules.js";
import { unknownNameMessage } from "./suggest.js";
import { findSinkFactory, parseSinkSpec } from "../sinks/registry.js";
import { SefError } from "@sef/errors/sef-error.js";

export class ConfigError extends SefError {
  override readonly name = "ConfigError";
  override readonly code = "SEF_ERR_CONFIG";
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
  }
}

type ValueKind = "string" | "integer" | "list";

/** The settings a SEF_* variable and a flag of `sef run` / `sef check-config` may set, and how their text is read. */
const overridableSettings: ReadonlyArray<{ field: string; variable: string; flag: string; kind: ValueKind }> = [
  { field: "imdsUrl", variable: "SEF_IMDS_URL", flag: "--imds-url", kind: "string" },
  { field: "apiVersion", variable: "SEF_API_VERSION", flag: "--api-version", kind: "string" },
  { field: "pollIntervalMs", variable: "SEF_POLL_INTERVAL_MS", flag: "--poll-interval-ms", kind: "integer" },
  { field: "dataDir", variable: "SEF_DATA_DIR", flag: "--data-dir", kind: "string" },
  { field: "sinks", variable: "SEF_SINKS", flag: "--sink", kind: "list" },
  { field: "logLevel", variable: "SEF_LOG_LEVEL", flag: "--log-level", kind: "string" },
  {
    field: "heartbeatIntervalMs",
    variable: "SEF_HEARTBEAT_INTERVAL_MS",
    flag: "--heartbeat-interval-ms",
    kind: "integer",
  },
  { field: "shutdownFlushMs", variable: "SEF_SHUTDOWN_FLUSH_MS", flag: "--shutdown-flush-ms", kind: "integer" },
  { field: "metricsPort", variable: "SEF_METRICS_PORT", flag: "--metrics-port", kind: "integer" },
  { field: "metricsHost", variable: "SEF_METRICS_HOST", flag: "--metrics-host", kind: "string" },
];

/** Environment variables the agent reads, and the config field each one sets. */
export const environmentVariables: Record<string, { field: string; kind: ValueKind }> = {
  SEF_CONFIG: { field: "(config file path)", kind: "string" },
  ...Object.fromEntries(overridableSettings.map(({ variable, field, kind }) => [variable, { field, kind }])),
};

/** Command-line flags of `sef run` / `sef check-config` that set a config field. */
export const configFlags: Record<string, { flag: string; kind: ValueKind }> = Object.fromEntries(
  overridableSettings.map(({ field, flag, kind }) => [field, { flag, kind }]),
);

/**
 * SEF_* names that are not the agent's settings but are not typos either: the ones read by the testbed, tests and
 * benchmarks. (The variables a plug-in names, or gives the processes it starts, are its entry's `referencedVariables`.)
 */
const reservedVariablePrefixes = ["SEF_TEST_", "SEF_BENCH_"];
const reservedVariables = ["SEF_DEMO_SCENARIO", "SEF_CRASH_SEED"];

export interface ConfigSources {
  /** Path of the JSON config file, if any. */
  file?: string;
  /** Raw flag values by config field name (strings as typed; undefined = not given). */
  flags?: Record<string, string | string[] | undefined>;
  env?: NodeJS.ProcessEnv;
}

/** Settings validated per configured sink, keyed by sink type. */
export interface LoadedConfig {
  config: AgentConfig;
  sinkSettings: Record<string, unknown>;
  /** The config file read, if any. */
  file: string | undefined;
}

/** Strict integer: optional sign and digits only (`1s`, `1e3`, `0x10`, `12.5` and "" are refused). */
export function parseStrictInteger(text: string): number | undefined {
  const trimmed = text.trim();
  if (!/^[+-]?\d+$/.test(trimmed)) return undefined;
  const n = Number(trimmed);
  return Number.isSafeInteger(n) ? n : undefined;
}

export function loadConfig(sources: ConfigSources): LoadedConfig {
  const env = sources.env ?? process.env;
  const problems: string[] = [];
  const merged: Record<string, unknown> = {};
  /** Where each top-level field came from, to name it in problems. */
  const origin = new Map<string, string>();

  const file = sources.file ?? (env.SEF_CONFIG || undefined);
  if (file) {
    for (const [key, value] of Object.entries(readConfigFile(file, problems))) {
      merged[key] = value;
      origin.set(key, `config file ${file}`);
    }
  }
  for (const [name, { field, kind }] of Object.entries(environmentVariables)) {
    const raw = env[name];
    if (raw === undefined || raw === "" || name === "SEF_CONFIG") continue;
    const value = convert(raw, kind, name, problems);
    if (value !== undefined) merged[field] = value;
    origin.set(field, name);
  }
  for (const [field, raw] of Object.entries(sources.flags ?? {})) {
    if (raw === undefined) continue;
    const spec = configFlags[field];
    const value = spec === undefined || Array.isArray(raw) ? raw : convert(raw, spec.kind, spec.flag, problems);
    if (value !== undefined) merged[field] = value;
    origin.set(field, spec?.flag ?? field);
  }
  problems.push(...unknownVariables(env, merged));

  const parsed = agentConfigSchema.safeParse(merged);
  if (!parsed.success) {
    problems.push(...formatIssues(parsed.error, agentConfigSchema, origin));
    problems.push(...crossFieldProblemsOfTheRest(merged, parsed.error, env));
    throw new ConfigError(problems);
  }
  const config = parsed.data;
  problems.push(...crossFieldProblems(config, env));
  if (problems.length > 0) throw new ConfigError(problems);

  // Each sink in use gets its section, or the section's defaults when the file has none (checked by the rules above).
  const sinkSettings: Record<string, unknown> = {};
  for (const spec of config.sinks) {
    const { type } = parseSinkSpec(spec);
    sinkSettings[type] = sinkSection(config, type) ?? findSinkFactory(type).settingsSchema.parse({});
  }
  return { config, sinkSettings, file };
}

/**
 * When some settings are invalid, the cross-field rules still judge the others (so every problem shows at once): the
 * bad top-level settings are set aside, and problems about them (or about the sinks, if those were bad) are left out.
 */
function crossFieldProblemsOfTheRest(
  merged: Record<string, unknown>,
  error: z.core.$ZodError,
  env: NodeJS.ProcessEnv,
): string[] {
  // Each issue's first path segment is the top-level setting it is about (an unknown top-level setting's has none).
  const bad = new Set<PropertyKey | undefined>(error.issues.map((issue) => issue.path[0]));
  if (bad.has("sinks")) return [];
  const rest = Object.fromEntries(Object.entries(merged).filter(([key]) => !bad.has(key)));
  const reparsed = agentConfigSchema.safeParse(
    Object.fromEntries(Object.entries(rest).filter(([key]) => key in agentConfigSchema.shape)),
  );
  if (!reparsed.success) return [];
  // What a problem is about: the setting its line starts with (an Event Hubs connection string's variable: eventhubs).
  const about = (problem: string): string =>
    problem.startsWith("environment variable") ? "eventhubs" : problem.split(/[^a-z]/i)[0]!;
  return crossFieldProblems(reparsed.data, env).filter((problem) => !bad.has(about(problem)));
}

function convert(raw: string, kind: ValueKind, name: string, problems: string[]): unknown {
  if (kind === "integer") {
    const n = parseStrictInteger(raw);
    if (n === undefined) problems.push(`${name}: expected a whole number, got "${raw}"`);
    return n;
  }
  if (kind === "list")
    return raw
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean);
  return raw;
}

function unknownVariables(env: NodeJS.ProcessEnv, merged: Record<string, unknown>): string[] {
  const known = Object.keys(environmentVariables);
  const allowed = new Set([...known, ...reservedVariables, ...referencedVariables(merged)]);
  return Object.keys(env)
    .filter(
      (name) =>
        name.startsWith("SEF_") && !allowed.has(name) && !reservedVariablePrefixes.some((p) => name.startsWith(p)),
    )
    .sort()
    .map((name) => `${name}: ${unknownNameMessage("environment variable", name, known)}`);
}

function readConfigFile(path: string, problems: string[]): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    problems.push(
      `config file ${path}: cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
    );
    return {};
  }
  try {
    // Editors on Windows save UTF-8 with a byte order mark; JSON.parse refuses it.
    const json = JSON.parse(text.replace(/^\uFEFF/, "")) as unknown;
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

interface SchemaNode {
  _zod?: {
    def: {
      type: string;
      innerType?: SchemaNode;
      shape?: Record<string, SchemaNode>;
      element?: SchemaNode;
    };
  };
}

/**
 * The keys an object schema accepts at `path` (through defaults, optionals and arrays: the wrappers the schema's
 * sections use), for suggestions; none past anything else (a record's values).
 */
function keysAt(schema: SchemaNode, path: readonly PropertyKey[]): string[] {
  let node: SchemaNode | undefined = schema;
  const unwrap = (): void => {
    while (node?._zod && ["default", "optional"].includes(node._zod.def.type)) node = node._zod.def.innerType;
  };
  for (const segment of path) {
    unwrap();
    const def: NonNullable<SchemaNode["_zod"]>["def"] | undefined = node?._zod?.def;
    if (def?.type === "object") node = def.shape?.[String(segment)];
    else if (def?.type === "array") node = def.element;
  }
  unwrap();
  return Object.keys(node?._zod?.def.shape ?? {});
}

function formatIssues(error: z.core.$ZodError, schema: unknown, origin: ReadonlyMap<string, string>): string[] {
  return error.issues.flatMap((issue) => {
    const path = issue.path.map(String).join(".");
    // Where the top-level setting came from (not used for a root issue, unknown top-level keys: each key's own is).
    const from = origin.get(String(issue.path[0]));
    const where = (name: string): string =>
      from === undefined || from.startsWith("config file") ? name : `${name} (${from})`;
    if (issue.code === "unrecognized_keys") {
      const known = keysAt(schema as SchemaNode, issue.path);
      return issue.keys.map((key) => {
        const name = path === "" ? key : `${path}.${key}`;
        const source = path === "" ? origin.get(key) : from;
        const label = source === undefined || source.startsWith("config file") ? name : `${name} (${source})`;
        return `${label}: ${unknownNameMessage("setting", key, known)}`;
      });
    }
    return [`${where(path)}: ${describeIssue(issue)}`]; // every issue but an unknown top-level key has a path
  });
}
