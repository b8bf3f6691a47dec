// `sef-testbed emulate logs-ingestion`: runs the local HTTPS Logs Ingestion peer until SIGTERM/SIGINT.
import type { Command } from "commander";
import { azureRuleLimits } from "../peers/logs-ingestion/rule-limits.js";
import { defaultLocalRuleId } from "../peers/logs-ingestion/local-rule.js";
import { parseFaultSpec, type Fault } from "../peers/logs-ingestion/faults.js";
import { streamName as contractStreamName } from "@sef/contract/stream-schema.js";
import { collect, integerFrom, peerCommand, stopSignal } from "./options.js";

interface EmulateLogsIngestionFlags {
  port: number;
  host: string;
  ruleId: string;
  stream: string;
  caCertOut?: string;
  fault: string[];
  requestsPerMinute: number;
  bytesPerMinute: number;
  authorizedClientId: string[];
}

const positiveInteger = integerFrom(1);

export function registerEmulateLogsIngestionCommand(emulate: Command): void {
  peerCommand(emulate, {
    name: "logs-ingestion",
    description: "local HTTPS Logs Ingestion API peer (self-signed certificate, local managed-identity tokens)",
  })
    .option("--rule-id <id>", "immutable id of the data collection rule served", defaultLocalRuleId)
    .option("--stream <name>", "stream declared by the rule", contractStreamName)
    .option("--ca-cert-out <file>", "write the certificate clients must trust to FILE (default: a temporary file)")
    .option(
      "--requests-per-minute <n>",
      "requests per minute the rule accepts before 429 + Retry-After",
      positiveInteger,
      azureRuleLimits.requestsPerMinute,
    )
    .option(
      "--bytes-per-minute <n>",
      "bytes per minute (after gunzip) the rule accepts before 429 + Retry-After",
      positiveInteger,
      azureRuleLimits.bytesPerMinute,
    )
    .option(
      "--authorized-client-id <id>",
      'only this identity (token appid; "system" = system-assigned) may ingest, others get 403 (repeatable)',
      collect,
      [],
    )
    .option(
      "--fault <spec>",
      "fail the next requests: N*KIND[:OPTIONS], KIND = HTTP status | reset | slow; e.g. 2*429:retry-after=1, 1*503, 1*reset, 3*slow:2000 (repeatable)",
      collect,
      [],
    )
    .action(async (flags: EmulateLogsIngestionFlags) => {
      const { createLogger } = await import("../support/logger.js");
      const { startLogsIngestionEmulator } = await import("../peers/logs-ingestion/server.js");
      const logger = createLogger();
      const faults: { count: number; fault: Fault }[] = flags.fault.map(parseFaultSpec);
      const peer = await startLogsIngestionEmulator({
        port: flags.port,
        host: flags.host,
        ruleId: flags.ruleId,
        streamName: flags.stream,
        limits: { requestsPerMinute: flags.requestsPerMinute, bytesPerMinute: flags.bytesPerMinute },
        ...(flags.authorizedClientId.length > 0 ? { authorizedClientIds: flags.authorizedClientId } : {}),
        logger,
        ...(flags.caCertOut ? { caCertPath: flags.caCertOut } : {}),
      });
      for (const { count, fault } of faults) peer.faults.failNext(count, fault);
      logger.info(
        { ruleId: peer.ruleId, streamName: peer.streamName, caCertPath: peer.caCertPath },
        "logs ingestion peer ready",
      );
      process.stdout.write(`sef-testbed emulate logs-ingestion listening on ${peer.endpoint}\n`);
      await stopSignal();
      await peer.close();
      process.exit(0);
    });
}
