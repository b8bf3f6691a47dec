// `sef-testbed emulate <peer>`: local peers that speak the real Azure (and Kubernetes API) protocols, for tests and the demo.
import type { Command } from "commander";
import { registerEmulateEventHubsCommand } from "./emulate-eventhubs.js";
import { registerEmulateLogsIngestionCommand } from "./emulate-logs-ingestion.js";
import { registerEmulateDhcpCommand } from "./emulate-dhcp.js";
import { registerEmulateKubernetesCommand } from "./emulate-kubernetes.js";

export function registerEmulateCommand(program: Command): void {
  const emulate = program
    .command("emulate")
    .description("run a local peer that speaks an Azure service's (or the Kubernetes API's) protocol");
  registerEmulateEventHubsCommand(emulate);
  registerEmulateLogsIngestionCommand(emulate);
  registerEmulateDhcpCommand(emulate);
  registerEmulateKubernetesCommand(emulate);
}
