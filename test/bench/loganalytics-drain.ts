// Benchmark: drains a backlog of transition records to the local Logs Ingestion peer through the Log Analytics sink
// (real LogsIngestionClient, HTTPS, gzip, local bearer tokens) with the real store and drainer (ledger-drain.ts); and,
// as the reference, the same sink alone in a loop (no store, no ledger: how the drain was measured before the ledger).
import { pathToFileURL } from "node:url";
import { startLogsIngestionEmulator } from "../../src/testbed/peers/logs-ingestion/index.js";
import { mintLocalToken } from "../../src/testbed/peers/local-tokens.js";
import { silentLogger } from "../../src/observability/logger.js";
import { LogAnalyticsSink } from "../../src/sinks/loganalytics/sink.js";
import { logAnalyticsSettingsSchema } from "../../src/sinks/loganalytics/settings.js";
import type { OutboxEntry } from "../../src/sinks/sink.js";
import { transitionBacklog } from "./backlog.js";
import { drainBacklogThroughLedger } from "./ledger-drain.js";

export interface LogAnalyticsDrainFigures {
  readonly recordsPerSecond: number;
  readonly megabytesPerSecond: number;
  readonly records: number;
  readonly seconds: number;
  /** CPU time of this process (user + system, the in-process peer included) per record during the drain. */
  readonly cpuMicrosecondsPerRecord: number;
}

/** The sink alone: batch after batch of the backlog straight from memory, as the drain was measured before the ledger. */
async function drainSinkAlone(sink: LogAnalyticsSink, backlog: readonly OutboxEntry[]): Promise<{ seconds: number; cpuMicroseconds: number }> {
  const startedMs = performance.now();
  const cpuBefore = process.cpuUsage();
  for (let i = 0; i < backlog.length; i += sink.maxBatchRecords) {
    const batch = backlog.slice(i, i + sink.maxBatchRecords);
    const outcomes = await sink.send(batch, new AbortController().signal);
    const notDelivered = outcomes.find((o) => o.kind !== "delivered");
    if (notDelivered) throw new Error(`bench send failed: ${JSON.stringify(notDelivered)}`);
  }
  const cpu = process.cpuUsage(cpuBefore);
  return { seconds: (performance.now() - startedMs) / 1000, cpuMicroseconds: cpu.user + cpu.system };
}

/**
 * Drains `records` records to an in-process peer; the figures cover the drain only (not building the backlog).
 * `through`: "ledger" (store + drainer, as the agent drains) or "sinkAlone" (the reference).
 */
export async function benchLogAnalyticsDrain(records = 100_000, through: "ledger" | "sinkAlone" = "ledger"): Promise<LogAnalyticsDrainFigures> {
  const peer = await startLogsIngestionEmulator();
  const sink = new LogAnalyticsSink({
    // SEF_BENCH_LOGANALYTICS_SETTINGS: extra sink settings as JSON, e.g. {"maxConcurrentSends":1}.
    settings: logAnalyticsSettingsSchema.parse({
      endpoint: peer.endpoint,
      ruleId: peer.ruleId,
      caCertFile: peer.caCertPath,
      ...(JSON.parse(process.env.SEF_BENCH_LOGANALYTICS_SETTINGS ?? "{}") as object),
    }),
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
    const { seconds, cpuMicroseconds } = through === "ledger" ? await drainBacklogThroughLedger(sink, all) : await drainSinkAlone(sink, all);
    if (peer.rows().length !== records) throw new Error(`peer holds ${peer.rows().length} rows, expected ${records}`);
    return {
      recordsPerSecond: Math.round(records / seconds),
      megabytesPerSecond: bytes / 1e6 / seconds,
      records,
      seconds,
      cpuMicrosecondsPerRecord: Math.round(cpuMicroseconds / records),
    };
  } finally {
    await sink.close();
    await peer.close();
  }
}

// `npx tsx test/bench/loganalytics-drain.ts [RECORDS] [ledger|sinkAlone]`
if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const through = process.argv[3] === "sinkAlone" ? "sinkAlone" : "ledger";
  console.log(JSON.stringify({ through, ...(await benchLogAnalyticsDrain(Number(process.argv[2] ?? 100_000), through)) }));
}
