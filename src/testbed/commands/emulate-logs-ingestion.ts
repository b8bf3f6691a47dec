// `sef-testbed emulate logs-ingestion`: runs the local HTTPS Logs Ingestion peer until SIGTERM/SIGINT.
import type { Command } from "commander";
import { createLogger } from "../support/logger.js";
import { defaultLocalRuleId, parseFaultSpec, startLogsIngestionEmulator, type Fault } from "../peers/logs-ingestion/index.js";
import { streamName as contractStreamName } from "../../contract/stream-schema.js";

interface EmulateLogsIngestionFlags {
  port: string;
  host: string;
  ruleId: string;
  stream: string;
  caCertOut?: string;
  fault: string[];
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

export function registerEmulateLogsIngestionCommand(emulate: Command): void {
  emulate
    .command("logs-ingestion")
    .description("local HTTPS Logs Ingestion API peer (self-signed certificate, local managed-identity tokens)")
    .option("--port <n>", "TCP port (0 = any free port)", "0")
    .option("--host <addr>", "listen address", "127.0.0.1")
    .option("--rule-id <id>", "immutable id of the data collection rule served", defaultLocalRuleId)
    .option("--stream <name>", "stream declared by the rule", contractStreamName)
    .option("--ca-cert-out <file>", "write the certificate clients must trust to FILE (default: a temporary file)")
    .option(
      "--fault <spec>",
      "fail the next requests: N*KIND[:OPTIONS], KIND = HTTP status | reset | slow; e.g. 2*429:retry-after=1, 1*503, 1*reset, 3*slow:2000 (repeatable)",
      collect,
      [],
    )
    .action(async (flags: EmulateLogsIngestionFlags) => {
      const logger = createLogger();
      const port = Number(flags.port);
      if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port must be 0..65535 (got "${flags.port}")`);
      const faults: { count: number; fault: Fault }[] = flags.fault.map(parseFaultSpec);
      const peer = await startLogsIngestionEmulator({
        port,
        host: flags.host,
        ruleId: flags.ruleId,
        streamName: flags.stream,
        logger,
        ...(flags.caCertOut ? { caCertPath: flags.caCertOut } : {}),
      });
      for (const { count, fault } of faults) peer.faults.failNext(count, fault);
      logger.info({ ruleId: peer.ruleId, streamName: peer.streamName, caCertPath: peer.caCertPath }, "logs ingestion peer ready");
      process.stdout.write(`sef-testbed emulate logs-ingestion listening on ${peer.endpoint}\n`);
      await new Promise<void>((resolve) => {
        process.once("SIGTERM", resolve);
        process.once("SIGINT", resolve);
      });
      await peer.close();
      process.exit(0);
    });
}
