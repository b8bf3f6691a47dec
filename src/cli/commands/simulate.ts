// `sef simulate`: a local IMDS (placeholder until the simulator lands).
import type { Command } from "commander";

export function registerSimulateCommand(program: Command): void {
  program.command("simulate").description("serve a local IMDS playing a scenario").action(() => {
    throw new Error("not implemented yet");
  });
}
