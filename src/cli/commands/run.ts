// `sef run`: the agent (placeholder until the agent core lands).
import type { Command } from "commander";

export function registerRunCommand(program: Command): void {
  program.command("run").description("run the agent").action(() => {
    throw new Error("not implemented yet");
  });
}
