#!/usr/bin/env node
// The `sef` command line: one subcommand per module in cli/commands/.
import { Command } from "commander";
import { agentVersion } from "../contract/agent-version.js";
import { registerRunCommand } from "./commands/run.js";
import { registerSimulateCommand } from "./commands/simulate.js";
import { registerEmulateCommand } from "./commands/emulate.js";
import { registerTailCommand } from "./commands/tail.js";

const program = new Command("sef")
  .description("Scheduled Events Forwarder: forwards Azure Scheduled Events transitions to telemetry sinks")
  .version(agentVersion)
  .showHelpAfterError()
  .enablePositionalOptions();

registerRunCommand(program);
registerSimulateCommand(program);
registerEmulateCommand(program);
registerTailCommand(program);

await program.parseAsync(process.argv);
