// The configuration flags `sef run` and `sef check-config` share, and how a configuration problem is shown: one plain
// line per bad setting on stderr, no stack trace, exit code 2.
import { Option, type Command } from "commander";
import { loadConfig, ConfigError, environmentVariables, type LoadedConfig } from "../config/load.js";
import { sinkFactories } from "../sinks/registry.js";
import { journalPriorities, stderrIsJournal } from "../observability/logger.js";
import { exitCodes, exitCodesHelp } from "./exit-codes.js";

export { exitCodes, exitCodesHelp } from "./exit-codes.js";

/** Adds the config flags; values stay strings so that every problem is reported the same way, all at once. */
export function addConfigOptions(command: Command): Command {
  return command
    .option("-c, --config <file>", "JSON config file (also SEF_CONFIG)")
    .option("--imds-url <url>", "IMDS base URL (default http://169.254.169.254)")
    .option("--api-version <version>", "scheduled events api-version (default 2020-07-01)")
    .option("--poll-interval-ms <n>", "poll period in ms (default 1000, min 200)")
    .option("--data-dir <dir>", "durable state and outbox directory (default /var/lib/sef; on Windows %ProgramData%\\sef\\data)")
    .option("--sink <spec>", `sink, repeatable: ${sinkFactories.map((f) => f.summary).join("; ")}`, (v: string, prev: string[] | undefined) => [...(prev ?? []), v])
    .addOption(new Option("--log-level <level>", "log level: fatal, error, warn, info, debug, trace, silent (default info)"))
    .option("--heartbeat-interval-ms <n>", "heartbeat record period in ms, 0 = off (default 900000)")
    .option("--shutdown-flush-ms <n>", "how long SIGTERM may spend flushing sinks (default 5000)")
    .option("--metrics-port <n>", "port of the /metrics, /healthz, /readyz server (default 9464, 0 = any)")
    .option("--metrics-host <address>", "listen address of the /metrics, /healthz, /readyz server (default 127.0.0.1)")
    .addHelpText(
      "after",
      `\nEnvironment variables:\n${Object.entries(environmentVariables)
        .map(([k, v]) => `  ${k.padEnd(28)} ${v.field}`)
        .join("\n")}\n\n${exitCodesHelp}`,
    );
}

/** Loads the configuration from parsed flags (plus SEF_* variables and the file). Throws ConfigError. */
export function loadFromOptions(opts: Record<string, unknown>, env: NodeJS.ProcessEnv = process.env): LoadedConfig {
  const text = (key: string): string | undefined => (typeof opts[key] === "string" ? (opts[key] as string) : undefined);
  return loadConfig({
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
}

/** Writes one `sef: config: …` line per problem on stderr (at error priority under journald) and returns exit code 2. */
export function reportConfigError(err: ConfigError): number {
  const prefix = stderrIsJournal() ? `<${journalPriorities.error}>` : "";
  process.stderr.write(err.problems.map((p) => `${prefix}sef: config: ${p.replace(/\s*\n\s*/g, " ")}\n`).join(""));
  return exitCodes.config;
}
