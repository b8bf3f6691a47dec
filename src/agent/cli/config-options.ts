// The configuration flags `sef run` and `sef check-config` share (their help's defaults, choices and bounds read from the
// schema), and how a configuration problem is shown: one plain line per bad setting on stderr, no stack trace, exit 2.
import { Option, type Command } from "commander";
import { loadConfig, ConfigError, environmentVariables, type LoadedConfig } from "../config/load.js";
import { sinkFactories } from "../sinks/registry.js";
import { configSecretValues, environmentSecretValues } from "../config/secret-values.js";
import { rememberSecretValues } from "@sef/redaction/secrets.js";
import { journalPriorities, stderrIsJournal } from "../observability/logger.js";
import { exitCodes, exitCodesHelp } from "./exit-codes.js";
import { settingChoices, settingDefault, settingMinimum, withDefault } from "./setting-help.js";

export { exitCodes, exitCodesHelp } from "./exit-codes.js";

/** Adds the config flags; values stay strings so that every problem is reported the same way, all at once. */
export function addConfigOptions(command: Command): Command {
  return command
    .option("-c, --config <file>", "JSON config file (also SEF_CONFIG)")
    .option("--imds-url <url>", withDefault("IMDS base URL", "imdsUrl"))
    .option("--api-version <version>", withDefault("scheduled events api-version", "apiVersion"))
    .option(
      "--poll-interval-ms <n>",
      withDefault(`poll period in ms, at least ${settingMinimum("pollIntervalMs")}`, "pollIntervalMs"),
    )
    .option("--data-dir <dir>", withDefault("durable state and outbox directory", "dataDir"))
    .option(
      "--sink <spec>",
      withDefault(`sink, repeatable: ${sinkFactories.map((f) => f.summary).join("; ")}`, "sinks"),
      (v: string, prev: string[] | undefined) => [...(prev ?? []), v],
    )
    .addOption(
      new Option("--log-level <level>", withDefault(`log level: ${settingChoices("logLevel").join(", ")}`, "logLevel")),
    )
    .option("--heartbeat-interval-ms <n>", withDefault("heartbeat record period in ms, 0 = off", "heartbeatIntervalMs"))
    .option(
      "--shutdown-flush-ms <n>",
      withDefault("how long SIGTERM may spend flushing sinks, in ms", "shutdownFlushMs"),
    )
    .option(
      "--metrics-port <n>",
      withDefault(
        `port of the /metrics, /healthz, /readyz server on ${settingDefault("metrics.host")}, 0 = any; overrides metrics.port`,
        "metrics.port",
      ),
    )
    .option(
      "--metrics-host <address>",
      withDefault("listen address of the /metrics, /healthz, /readyz server; overrides metrics.host", "metrics.host"),
    )
    .addHelpText(
      "after",
      `\nEnvironment variables:\n${Object.entries(environmentVariables)
        .map(([k, v]) => `  ${k.padEnd(28)} ${v.field}`)
        .join("\n")}\n\n${exitCodesHelp}`,
    );
}

/**
 * Loads the configuration from parsed flags (plus SEF_* variables and the file). Throws ConfigError. The secret values
 * of the environment, then of the configuration, are remembered first, so no log line, record or error shows them.
 */
export function loadFromOptions(opts: Record<string, unknown>, env: NodeJS.ProcessEnv = process.env): LoadedConfig {
  const text = (key: string): string | undefined => (typeof opts[key] === "string" ? (opts[key] as string) : undefined);
  rememberSecretValues(environmentSecretValues(env));
  const loaded = loadConfig({
    file: text("config"),
    env,
    flags: {
      imdsUrl: text("imdsUrl"),
      apiVersion: text("apiVersion"),
      pollIntervalMs: text("pollIntervalMs"),
      dataDir: text("dataDir"),
      sinks: Array.isArray(opts.sink) ? (opts.sink as string[]) : undefined,
      logLevel: text("logLevel"),
      heartbeatIntervalMs: text("heartbeatIntervalMs"),
      shutdownFlushMs: text("shutdownFlushMs"),
      metricsPort: text("metricsPort"),
      metricsHost: text("metricsHost"),
    },
  });
  rememberSecretValues(configSecretValues(loaded.config, env));
  return loaded;
}

/** Writes one `sef: config: …` line per problem on stderr (at error priority under journald) and returns exit code 2. */
export function reportConfigError(err: ConfigError): number {
  const prefix = stderrIsJournal() ? `<${journalPriorities.error}>` : "";
  process.stderr.write(err.problems.map((p) => `${prefix}sef: config: ${p.replace(/\s*\n\s*/g, " ")}\n`).join(""));
  return exitCodes.config;
}
