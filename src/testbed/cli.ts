#!/usr/bin/env node
// The `sef-testbed` command line: the local IMDS simulator and the local Azure peers, for tests, the demo and users'
// own experiments. Not part of the agent artifact; it speaks only the published protocols and the record contract.
// A usage error (unknown command or option, missing or bad value) exits 2 with commander's one-line message. Each
// command loads its simulator or peer only when it runs: a usage error or `--help` costs a Node start, not the peers.
import { Command, CommanderError } from "commander";
import { registerSimulateCommand } from "./commands/simulate.js";
import { registerEmulateCommand } from "./commands/emulate.js";
import { testbedVersion } from "./testbed-version.js";

const program = new Command("sef-testbed")
  .description("local IMDS simulator and Azure peers (Event Hubs, Logs Ingestion) for testing sef")
  .version(testbedVersion)
  .showHelpAfterError("(sef-testbed --help lists the commands; sef-testbed COMMAND --help their options)")
  .enablePositionalOptions()
  .exitOverride();

registerSimulateCommand(program);
registerEmulateCommand(program);

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (!(err instanceof CommanderError)) throw err;
  // Help and version end "with an error" in commander's terms; they are a success.
  process.exitCode = err.exitCode === 0 ? 0 : 2;
}
