#!/usr/bin/env node
// The `sef-testbed` command line: the local IMDS simulator and the local Azure peers, for tests, the demo and users'
// own experiments. Not part of the agent artifact; it speaks only the published protocols and the record contract.
import { Command } from "commander";
import { registerSimulateCommand } from "./commands/simulate.js";
import { registerEmulateCommand } from "./commands/emulate.js";

const program = new Command("sef-testbed")
  .description("local IMDS simulator and Azure peers (Event Hubs, Logs Ingestion) for testing sef")
  .showHelpAfterError()
  .enablePositionalOptions();

registerSimulateCommand(program);
registerEmulateCommand(program);

await program.parseAsync(process.argv);
