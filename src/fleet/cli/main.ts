#!/usr/bin/env node
// `sef-fleet --config FILE`: the fleet service's entry point, the cloud-side consumer that turns the agents' records
// in Event Hubs into one notification per maintenance event. Runs until SIGTERM/SIGINT; a bad config or a usage error
// (unknown option, missing value) exits 2.
import { readFileSync } from "node:fs";
import { Command, CommanderError } from "commander";
import { createFleetLogger } from "../logger.js";
import { fleetVersion } from "../fleet-version.js";
import { FleetConfigError } from "../errors.js";

interface FleetFlags {
  config?: string;
  configEnv?: string;
  logLevel?: string;
}

async function runFleet(flags: FleetFlags): Promise<void> {
  const { fleetSettingsSchema } = await import("../settings.js");
  const { startFleetService } = await import("../fleet-service.js");
  let raw: unknown;
  const source = flags.config ?? `environment variable ${flags.configEnv}`;
  try {
    if (!flags.config && !flags.configEnv) throw new FleetConfigError("give --config FILE or --config-env NAME");
    const text = flags.config ? readFileSync(flags.config, "utf8") : (process.env[flags.configEnv!] ?? "");
    if (!text) throw new FleetConfigError("it is empty");
    raw = JSON.parse(text.replace(/^\uFEFF/, ""));
  } catch (err) {
    process.stderr.write(`sef fleet: cannot read the configuration from ${source}: ${(err as Error).message}\n`);
    process.exit(2);
  }
  const parsed = fleetSettingsSchema.safeParse(raw);
  if (!parsed.success) {
    for (const issue of parsed.error.issues)
      process.stderr.write(`sef fleet: ${issue.path.join(".") || "(config)"}: ${issue.message}\n`);
    process.exit(2);
  }
  const settings = parsed.data;
  const logger = createFleetLogger(flags.logLevel ?? settings.logLevel);
  let service;
  try {
    service = await startFleetService({ settings, env: process.env, logger });
  } catch (err) {
    if (err instanceof FleetConfigError) {
      process.stderr.write(`sef fleet: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  logger.info({ port: service.port }, "sef fleet running");
  process.stdout.write(`sef fleet ready on port ${service.port}\n`);
  const stop = (): void => {
    service
      .stop(10_000)
      .then(() => process.exit(0))
      .catch(() => process.exit(1));
  };
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
}

const program = new Command("sef-fleet")
  .description("consume the agents' records from Event Hubs and send one notification per maintenance event")
  .version(fleetVersion)
  .option("--config <file>", "fleet configuration (JSON)")
  .option("--config-env <name>", "environment variable holding the fleet configuration as JSON (containers)")
  .option("--log-level <level>", "overrides the configuration's logLevel")
  .showHelpAfterError()
  .exitOverride()
  .action(runFleet);

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (!(err instanceof CommanderError)) throw err;
  process.exitCode = err.exitCode === 0 ? 0 : 2;
}
