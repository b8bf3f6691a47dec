// The `sef` command line: one subcommand per module in cli/commands/. Only the named command's module loads:
// `sef run` (the agent, resident on every VM) never loads what tail, fleet, discover or the ledger commands need, and
// `sef --version` loads none of them. Help and unknown commands load every module (help lists them all).
// A usage error (unknown subcommand or option, missing argument) exits 2 with commander's one-line message.
import { Command, CommanderError } from "commander";
import { agentVersion } from "../agent-version.js";
import { exitCodes } from "./exit-codes.js";

const program = new Command("sef")
  .description("Scheduled Events Forwarder: forwards Azure Scheduled Events transitions to telemetry sinks")
  .version(agentVersion)
  .showHelpAfterError("(sef --help lists the commands; sef COMMAND --help their options)")
  .enablePositionalOptions()
  .exitOverride();

/** Each command (or group: the ledger's `outbox` and `dead-letter`) and how to load and register it, in help order. */
const commandModules: ReadonlyArray<readonly [readonly string[], () => Promise<void>]> = [
  [["run"], async () => (await import("./commands/run.js")).registerRunCommand(program)],
  [["check-config"], async () => (await import("./commands/check-config.js")).registerCheckConfigCommand(program)],
  [["tail"], async () => (await import("./commands/tail.js")).registerTailCommand(program)],
  [["discover"], async () => (await import("./commands/discover.js")).registerDiscoverCommand(program)],
  [["outbox", "dead-letter"], async () => (await import("./commands/ledger.js")).registerLedgerCommands(program)],
];

const first = process.argv[2];
const named = commandModules.find(([names]) => first !== undefined && names.includes(first));
if (named) await named[1]();
else if (first !== "--version" && first !== "-V") for (const [, load] of commandModules) await load();
for (const command of program.commands) command.exitOverride();

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (!(err instanceof CommanderError)) throw err;
  // Help and version end "with an error" in commander's terms; they are a success.
  process.exitCode = err.exitCode === 0 ? exitCodes.ok : exitCodes.config;
}
