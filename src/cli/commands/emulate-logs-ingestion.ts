// `sef emulate logs-ingestion`: placeholder until the HTTPS peer lands.
import type { Command } from "commander";

export function registerEmulateLogsIngestionCommand(emulate: Command): void {
  emulate.command("logs-ingestion").description("local HTTPS Logs Ingestion peer (not implemented yet)");
}
