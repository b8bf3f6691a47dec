// `sef check-config`: the same configuration validation as `sef run`, and nothing started (installers, CI).
// Exit 0 with a one-line summary on stdout, or exit 2 with one line per problem on stderr.
import type { Command } from "commander";
import { ConfigError } from "../../config/load.js";
import { addConfigOptions, exitCodes, loadFromOptions, reportConfigError } from "../config-options.js";

export function registerCheckConfigCommand(program: Command): void {
  addConfigOptions(
    program
      .command("check-config")
      .description("validate the configuration (file, SEF_* variables, flags) as `sef run` would; start nothing"),
  ).action((opts: Record<string, unknown>) => {
    process.exitCode = checkConfig(opts);
  });
}

function checkConfig(opts: Record<string, unknown>): number {
  try {
    const { config, file } = loadFromOptions(opts);
    process.stdout.write(
      `sef: configuration is valid${file ? ` (${file})` : ""}: sinks ${config.sinks.join(", ")}; data dir ${config.dataDir}\n`,
    );
    return exitCodes.ok;
  } catch (err) {
    if (err instanceof ConfigError) return reportConfigError(err);
    throw err;
  }
}
