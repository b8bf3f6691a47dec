// Benchmark: drains a backlog of transition records to the local Logs Ingestion peer through the Log Analytics sink
// (real LogsIngestionClient, HTTPS, gzip, local bearer tokens) with the real store and drainer (ledger-drain.ts).
import { pathToFileURL } from "node:url";
import { startLogsIngestionEmulator } from "../../src/testbed/peers/logs-ingestion/index.js";
import { mintLocalToken } from "../../src/testbed/peers/local-tokens.js";
import { silentLogger } from "../../src/observability/logger.js";
import { LogAnalyticsSink } from "../../src/sinks/loganalytics/sink.js";
import { logAnalyticsSettingsSchema } from "../../src/sinks/loganalytics/settings.js";
import { transitionBacklog } from "./backlog.js";
import { drainBacklogThroughLedger } from "./ledger-drain.js";

/** Drains `records` records to an in-process peer; the figures cover the drain only (not building the backlog). */
export async function benchLogAnalyticsDrain(
  records = 100_000,
): Promise<{ recordsPerSecond: number; megabytesPerSecond: number; records: number; seconds: number }> {
  const peer = await startLogsIngestionEmulator();
  const sink = new LogAnalyticsSink({
    settings: logAnalyticsSettingsSchema.parse({ endpoint: peer.endpoint, ruleId: peer.ruleId, caCertFile: peer.caCertPath }),
    logger: silentLogger(),
    credential: {
      getToken: async () => {
        const { token, claims } = mintLocalToken("https://monitor.azure.com");
        return { token, expiresOnTimestamp: claims.exp * 1000, tokenType: "Bearer" as const };
      },
    },
  });
  const all = transitionBacklog(records);
  const bytes = all.reduce((n, e) => n + Buffer.byteLength(e.json), 0);
  try {
    const { seconds } = await drainBacklogThroughLedger(sink, all);
    if (peer.rows().length !== records) throw new Error(`peer holds ${peer.rows().length} rows, expected ${records}`);
    return { recordsPerSecond: Math.round(records / seconds), megabytesPerSecond: bytes / 1e6 / seconds, records, seconds };
  } finally {
    await sink.close();
    await peer.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  console.log(JSON.stringify(await benchLogAnalyticsDrain(Number(process.argv[2] ?? 100_000))));
}
