// Benchmark: drains a backlog of transition records to the local Logs Ingestion peer through the Log Analytics sink
// (real LogsIngestionClient, HTTPS, gzip, local bearer tokens) with the real store and drainer (ledger-drain.ts); and,
// as the reference, the same sink alone in a loop (no store, no ledger: how the drain was measured before the ledger).
// The peer runs in this thread ("inProcess": how the pre-ledger figure was taken, the peer's CPU competing with the
// agent's) or in a worker thread ("worker": the service's work off the agent's thread, as a remote service would be).
import { plainWorkerExecArgv } from "./worker-exec-argv.js";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import { nextWorkerMessage } from "./worker-messages.js";
import { startLogsIngestionEmulator } from "../../src/testbed/peers/logs-ingestion/index.js";
import { mintLocalToken } from "../../src/testbed/peers/local-tokens.js";
import { silentLogger } from "../../src/agent/observability/logger.js";
import { LogAnalyticsSink } from "../../src/agent/sinks/loganalytics/sink.js";
import { logAnalyticsSettingsSchema } from "../../src/agent/sinks/loganalytics/settings.js";
import type { OutboxEntry } from "../../src/agent/delivery/outbox-entry.js";
import { transitionBacklog } from "./backlog.js";
import { drainBacklogThroughLedger } from "./ledger-drain.js";

export interface LogAnalyticsDrainFigures {
  readonly recordsPerSecond: number;
  readonly megabytesPerSecond: number;
  readonly records: number;
  readonly seconds: number;
  /** CPU time of this process (user + system; with the peer in a worker thread, its thread included) per record. */
  readonly cpuMicrosecondsPerRecord: number;
}

/** The sink alone: batch after batch of the backlog straight from memory, as the drain was measured before the ledger. */
async function drainSinkAlone(
  sink: LogAnalyticsSink,
  backlog: readonly OutboxEntry[],
): Promise<{ seconds: number; cpuMicroseconds: number }> {
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

interface BenchPeer {
  readonly endpoint: string;
  readonly ruleId: string;
  readonly caCertPath: string;
  rowCount(): Promise<number>;
  close(): Promise<void>;
}

const distPeer = pathToFileURL(
  fileURLToPath(new URL("../../src/testbed/dist/peers/logs-ingestion/index.js", import.meta.url)),
).href;

async function startPeer(placement: "inProcess" | "worker"): Promise<BenchPeer> {
  if (placement === "inProcess") {
    const peer = await startLogsIngestionEmulator();
    return {
      endpoint: peer.endpoint,
      ruleId: peer.ruleId,
      caCertPath: peer.caCertPath,
      rowCount: async () => peer.rows().length,
      close: () => peer.close(),
    };
  }
  const source = `
    const { parentPort, workerData } = require("node:worker_threads");
    import(workerData.distPeer).then(async ({ startLogsIngestionEmulator }) => {
      const peer = await startLogsIngestionEmulator();
      parentPort.on("message", async (message) => {
        if (message === "rows") parentPort.postMessage({ kind: "rows", rows: peer.rows().length });
        if (message === "close") { await peer.close(); parentPort.postMessage({ kind: "closed" }); }
      });
      parentPort.postMessage({ kind: "ready", endpoint: peer.endpoint, ruleId: peer.ruleId, caCertPath: peer.caCertPath });
    });`;
  const worker = new Worker(source, { eval: true, execArgv: plainWorkerExecArgv(), workerData: { distPeer } });
  const next = (kind: string): Promise<Record<string, unknown>> => nextWorkerMessage(worker, kind);
  const ready = await next("ready");
  return {
    endpoint: String(ready.endpoint),
    ruleId: String(ready.ruleId),
    caCertPath: String(ready.caCertPath),
    rowCount: async () => {
      const rows = next("rows");
      worker.postMessage("rows");
      return Number((await rows).rows);
    },
    close: async () => {
      const closed = next("closed");
      worker.postMessage("close");
      await closed;
      await worker.terminate();
    },
  };
}

/**
 * Drains `records` records to the peer; the figures cover the drain only (not building the backlog).
 * `through`: "ledger" (store + drainer, as the agent drains) or "sinkAlone" (the reference).
 */
export async function benchLogAnalyticsDrain(
  records = 100_000,
  through: "ledger" | "sinkAlone" = "ledger",
  peerPlacement: "inProcess" | "worker" = "worker",
): Promise<LogAnalyticsDrainFigures> {
  const peer = await startPeer(peerPlacement);
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
    const { seconds, cpuMicroseconds } =
      through === "ledger" ? await drainBacklogThroughLedger(sink, all) : await drainSinkAlone(sink, all);
    const rows = await peer.rowCount();
    if (rows !== records) throw new Error(`peer holds ${rows} rows, expected ${records}`);
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

// `npx tsx test/bench/loganalytics-drain.ts [RECORDS] [ledger|sinkAlone] [worker|inProcess]` (after `npm run build`)
if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const through = process.argv[3] === "sinkAlone" ? "sinkAlone" : "ledger";
  const placement = process.argv[4] === "inProcess" ? "inProcess" : "worker";
  console.log(
    JSON.stringify({
      through,
      peer: placement,
      ...(await benchLogAnalyticsDrain(Number(process.argv[2] ?? 100_000), through, placement)),
    }),
  );
}
