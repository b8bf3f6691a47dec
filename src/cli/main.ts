#!/usr/bin/env node
// The `sef` command line: one subcommand per module in cli/commands/. `sef run` (the agent, resident on every VM)
// loads only its own module; `sef tail` pulls in the Event Hubs consumer it never needs.
import { Command } from "commander";
import { agentVersion } from "../contract/agent-version.js";
import { registerRunCommand } from "./commands/run.js";

const program = new Command("sef")
  .description("Scheduled Events Forwarder: forwards Azure Scheduled Events transitions to telemetry sinks")
  .version(agentVersion)
  .showHelpAfterError()
  .enablePositionalOptions();

registerRunCommand(program);
if (process.argv[2] !== "run") {
  const { registerTailCommand } = await import("./commands/tail.js");
  registerTailCommand(program);
  const { registerLedgerCommands } = await import("./commands/ledger.js");
  registerLedgerCommands(program);
}

await program.parseAsync(process.argv);
