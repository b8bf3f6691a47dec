// The `sef` command line: one subcommand per module in cli/commands/. `sef run` (the agent, resident on every VM)
// loads only its own module; `sef tail`, `sef fleet`, `sef discover` and the ledger commands pull in what it never needs.
// A usage error (unknown subcommand or option, missing argument) exits 2 with commander's one-line message.
import { Command, CommanderError } from "commander";
import { agentVersion } from "../contract/agent-version.js";
import { registerRunCommand } from "./commands/run.js";
import { exitCodes } from "./config-options.js";

const program = new Command("sef")
  .description("Scheduled Events Forwarder: forwards Azure Scheduled Events transitions to telemetry sinks")
  .version(agentVersion)
  .showHelpAfterError("(sef --help lists the commands; sef COMMAND --help their options)")
  .enablePositionalOptions()
  .exitOverride();

registerRunCommand(program);
if (process.argv[2] !== "run") {
  const { registerCheckConfigCommand } = await import("./commands/check-config.js");
  registerCheckConfigCommand(program);
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
for (const command of program.commands) command.exitOverride();

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (!(err instanceof CommanderError)) throw err;
  // Help and version end "with an error" in commander's terms; they are a success.
  process.exitCode = err.exitCode === 0 ? exitCodes.ok : exitCodes.config;
}
