// Benchmark: a fleet of Event Hubs sinks, each with its own client, sending one record per minute at a random offset
// for 5 minutes against the local peer (in a worker thread, counting concurrent TCP connections), time compressed by
// `timeScale` (the send interval and the idle period both shrink; connection setup does not). Peak/mean connections,
// delivered/lost, and the send latency a reconnect adds.
import { plainWorkerExecArgv } from "./worker-exec-argv.js";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import { nextWorkerMessage } from "./worker-messages.js";
import { unknownVmIdentity } from "../../src/contract/record.js";
import { heartbeatRecord } from "../../src/contract/heartbeat-record.js";
import { silentLogger } from "../../src/agent/observability/logger.js";
import {
  createProducerClient,
  EventHubsSink,
  IdleClosingProducer,
  resolveEventHubsAuth,
  eventHubsSettingsSchema,
} from "../../src/agent/sinks/eventhubs/index.js";
import type { OutboxEntry } from "../../src/agent/delivery/outbox-entry.js";

export interface FleetOptions {
  /** Sink instances, each with its own client (and connection while it holds one). */
  readonly instances: number;
  /** Real-time send interval per instance (one record per minute). */
  readonly sendIntervalMs: number;
  /** Real-time duration of the run (5 minutes: 5 records per instance). */
  readonly durationMs: number;
  /** Real-time idle period before a sink closes its connection. */
  readonly idleCloseMs: number;
  /** Real time is divided by this (the interval, duration and idle period shrink alike). */
  readonly timeScale: number;
}

export interface FleetFigures {
  readonly instances: number;
  readonly timeScale: number;
  readonly scaledSendIntervalMs: number;
  readonly scaledIdleCloseMs: number;
  readonly recordsSent: number;
  readonly delivered: number;
  readonly lost: number;
  readonly retriedSends: number;
  readonly peakConcurrentConnections: number;
  readonly meanConcurrentConnections: number;
  readonly peakPercentOfInstances: number;
  readonly connectionsOpened: number;
  /** Connections still open `idleCloseMs` + 2 s after the last send (0: every sink let go). */
  readonly connectionsOpenAfterIdle: number;
  /** Send duration (sink.send call → accepted), all sends / sends that had to open a connection. */
  readonly sendP50Ms: number;
  readonly sendP99Ms: number;
  readonly reconnectSendP99Ms: number;
  /** What a reconnect adds at p99: reconnecting sends' p99 minus the p50 of sends on an open connection (≥ 0). */
  readonly addedLatencyP99Ms: number;
  /** Records whose send never came back ok (20 attempts); absent when 0. */
  readonly unacknowledged?: number;
}

interface PeerStats {
  readonly connectionsCurrent: number;
  readonly connectionsPeak: number;
  readonly connectionsOpened: number;
  /** Connections still open `idleCloseMs` + 2 s after the last send (0: every sink let go). */
  readonly connectionsOpenAfterIdle: number;
  readonly stored: number;
  readonly meanConnections: number;
}

const distServer = pathToFileURL(
  fileURLToPath(new URL("../../src/testbed/dist/peers/eventhubs/server.js", import.meta.url)),
).href;

/** The peer in a worker thread (its own event loop, like a service), sampling its connection count every 20 ms. */
async function startPeerWorker(): Promise<{
  connectionString: string;
  stats(): Promise<PeerStats>;
  resetMean(): void;
  stop(): Promise<void>;
}> {
  const source = `
    const { parentPort } = require("node:worker_threads");
    import(${JSON.stringify(distServer)}).then(async ({ startEventHubsEmulator }) => {
      const peer = await startEventHubsEmulator({ hubName: "sef-fleet", partitionCount: 4, maxMessageSize: 1024 * 1024 });
      let area = 0, since = performance.now(), last = since;
      const sampler = setInterval(() => { const now = performance.now(); area += peer.stats.connectionsCurrent * (now - last); last = now; }, 20);
      parentPort.on("message", async (message) => {
        if (message === "reset") { area = 0; since = last = performance.now(); return; }
        if (message === "stats") {
          const now = performance.now(); area += peer.stats.connectionsCurrent * (now - last); last = now;
          parentPort.postMessage({ kind: "stats", stats: { ...peer.stats, stored: peer.events().length, meanConnections: area / Math.max(1, now - since) } });
          return;
        }
        if (message === "stop") { clearInterval(sampler); await peer.close(); parentPort.postMessage({ kind: "stopped" }); }
      });
      parentPort.postMessage({ kind: "ready", connectionString: peer.connectionString });
    });`;
  const worker = new Worker(source, { eval: true, execArgv: plainWorkerExecArgv() });
  const next = (kind: string): Promise<Record<string, unknown>> => nextWorkerMessage(worker, kind);
  const ready = await next("ready");
  return {
    connectionString: String(ready.connectionString),
    stats: async () => {
      const answer = next("stats");
      worker.postMessage("stats");
      return (await answer).stats as PeerStats;
    },
    resetMean: () => worker.postMessage("reset"),
    stop: async () => {
      const stopped = next("stopped");
      worker.postMessage("stop");
      await stopped.catch(() => undefined);
      await worker.terminate();
    },
  };
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

const round1 = (n: number): number => Math.round(n * 10) / 10;

export async function benchEventHubsFleet(options: FleetOptions): Promise<FleetFigures> {
  const { instances, timeScale } = options;
  const intervalMs = options.sendIntervalMs / timeScale;
  const durationMs = options.durationMs / timeScale;
  const idleCloseMs = Math.max(1, Math.round(options.idleCloseMs / timeScale));
  const sendsPerInstance = Math.floor(options.durationMs / options.sendIntervalMs);
  const peer = await startPeerWorker();
  const logger = silentLogger();
  const settings = eventHubsSettingsSchema.parse({
    connectionString: peer.connectionString,
    idleCloseMs,
    maxRetries: 1,
    retryDelayMs: 50,
    tryTimeoutMs: 10_000,
  });
  const auth = resolveEventHubsAuth(settings, {});
  // As createEventHubsSink builds it, keeping the producer to see whether a send found its connection open.
  const fleet = Array.from({ length: instances }, () => {
    const producer = new IdleClosingProducer({ createClient: () => createProducerClient(auth, settings), idleCloseMs });
    const sink = new EventHubsSink({
      producer,
      logger,
      partitionKeyField: settings.partitionKeyField,
      maxBatchRecords: 100,
      lingerMs: 0,
      maxConcurrentBatches: 1,
    });
    return { producer, sink };
  });

  const openSendMs: number[] = [];
  const reconnectSendMs: number[] = [];
  let sent = 0;
  let retried = 0;
  let acked = 0;
  const start = performance.now();
  peer.resetMean();
  const runInstance = async (
    index: number,
    { producer, sink }: { producer: IdleClosingProducer; sink: EventHubsSink },
  ): Promise<void> => {
    const offsetMs = Math.random() * intervalMs;
    const vm = {
      ...unknownVmIdentity,
      AgentId: `agent-${index}`,
      VmName: `vm-${index}`,
      VmId: `00000000-0000-4000-8000-${String(index).padStart(12, "0")}`,
    };
    for (let k = 0; k < sendsPerInstance; k++) {
      const dueMs = start + offsetMs + k * intervalMs;
      await new Promise((r) => setTimeout(r, Math.max(0, dueMs - performance.now())));
      const record = heartbeatRecord({ vm, agentVersion: "bench" }, Date.now(), { k });
      const entry: OutboxEntry = { seq: k + 1, record, json: JSON.stringify(record) };
      sent++;
      const wasOpen = producer.isOpen;
      const t0 = performance.now();
      for (let attempt = 0; attempt < 20; attempt++) {
        const result = (await sink.send([entry], new AbortController().signal))[0]!;
        if (result.kind === "delivered") {
          acked++;
          break;
        }
        retried++;
        await new Promise((r) => setTimeout(r, 100));
      }
      (wasOpen ? openSendMs : reconnectSendMs).push(performance.now() - t0);
    }
  };
  await Promise.all(fleet.map((member, i) => runInstance(i, member)));
  // The run's end, then the last connections go idle and close (the peer must see none left).
  await new Promise((r) => setTimeout(r, Math.max(0, start + durationMs - performance.now())));
  const stats = await peer.stats();
  await new Promise((r) => setTimeout(r, idleCloseMs + 2000));
  const afterIdle = await peer.stats();
  await Promise.all(fleet.map(({ sink }) => sink.close()));
  await peer.stop();

  const all = [...openSendMs, ...reconnectSendMs].sort((a, b) => a - b);
  const reconnecting = [...reconnectSendMs].sort((a, b) => a - b);
  const open = [...openSendMs].sort((a, b) => a - b);
  const baselineMs = open.length > 0 ? percentile(open, 50) : 0;
  return {
    instances,
    timeScale,
    scaledSendIntervalMs: round1(intervalMs),
    scaledIdleCloseMs: idleCloseMs,
    recordsSent: sent,
    delivered: stats.stored,
    lost: sent - stats.stored,
    retriedSends: retried,
    peakConcurrentConnections: stats.connectionsPeak,
    meanConcurrentConnections: round1(stats.meanConnections),
    peakPercentOfInstances: round1((100 * stats.connectionsPeak) / instances),
    connectionsOpened: stats.connectionsOpened,
    connectionsOpenAfterIdle: afterIdle.connectionsCurrent,
    sendP50Ms: round1(percentile(all, 50)),
    sendP99Ms: round1(percentile(all, 99)),
    reconnectSendP99Ms: round1(percentile(reconnecting, 99)),
    addedLatencyP99Ms: round1(Math.max(0, percentile(reconnecting, 99) - baselineMs)),
    ...(acked !== sent ? { unacknowledged: sent - acked } : {}),
  };
}

/** Defaults of `npm run bench` (env overrides): 1,000 instances, 1 record/min for 5 min, idle 1 s, time ÷ 2. */
export function fleetOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): FleetOptions {
  return {
    instances: Number(env.SEF_BENCH_FLEET_INSTANCES ?? 1000),
    sendIntervalMs: 60_000,
    durationMs: 5 * 60_000,
    idleCloseMs: Number(env.SEF_BENCH_FLEET_IDLE_MS ?? 1000),
    timeScale: Number(env.SEF_BENCH_FLEET_TIME_SCALE ?? 2),
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  console.log(JSON.stringify(await benchEventHubsFleet(fleetOptionsFromEnv()), null, 2));
  process.exit(0);
}
