#!/usr/bin/env node
// The `sef` command line: one subcommand per module in cli/commands/. `sef run` (the agent, resident on every VM)
// loads only its own module; `sef tail`, `sef fleet` and `sef discover` pull in what it never needs.
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
  const [{ registerTailCommand }, { registerFleetCommand }, { registerDiscoverCommand }] = await Promise.all([
    import("./commands/tail.js"),
    import("./commands/fleet.js"),
    import("./commands/discover.js"),
  ]);
  registerTailCommand(program);
  registerFleetCommand(program);
  registerDiscoverCommand(program);
  const { registerLedgerCommands } = await import("./commands/ledger.js");
  registerLedgerCommands(program);
}

await program.parseAsync(process.argv);
