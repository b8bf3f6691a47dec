// `sef emulate eventhubs`: placeholder until the AMQP peer lands.
import type { Command } from "commander";

export function registerEmulateEventHubsCommand(emulate: Command): void {
  emulate.command("eventhubs").description("local AMQP 1.0 Event Hubs peer (not implemented yet)");
}
