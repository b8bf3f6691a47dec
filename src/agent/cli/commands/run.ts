// `sef run`: the command and its options (the config's flags). What it runs (run-agent.ts: the agent, its store, sinks
// and services) loads only when it runs, so a usage error or `--help` costs none of it.
import type { Command } from "commander";
import { addConfigOptions } from "../config-options.js";

/** How long the process may linger after the agent stopped (open sockets to a peer that stopped answering). */
const exitGraceMs = 500;

export function registerRunCommand(program: Command): void {
  addConfigOptions(
    program
      .command("run")
      .description("run the agent: poll IMDS scheduled events and forward transitions to the sinks"),
  )
    .option(
      "--replay-from <time|seq>",
      "send the records still held in the outbox from this ISO time or outbox sequence number on to every sink again (backfills a new sink)",
    )
    .action(async (opts: Record<string, unknown>) => {
      const { runAgent } = await import("./run-agent.js");
      const code = await runAgent(opts);
      process.exitCode = code;
      // Everything durable is done. A connection to a peer that stopped answering may keep the event loop alive:
      // exit anyway, after a moment for output still being written.
      setTimeout(() => process.exit(code), exitGraceMs).unref();
    });
}
