// `sef tail <source>`: print records as they arrive (placeholder until the Event Hubs consumer lands).
import type { Command } from "commander";

export function registerTailCommand(program: Command): void {
  program.command("tail").description("print records from a destination as they arrive");
}
