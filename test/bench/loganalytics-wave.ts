// Benchmark: a maintenance wave into one data collection rule. Many Log Analytics sinks (each its own agent: its own
// client and throttling book) send 3 transitions each at random moments of one window, one request per transition,
// retrying as the drain loop does (the shared retry policy, the server's Retry-After winning). The Logs Ingestion peer
// runs in a worker thread with a lowered per-rule request limit. Reported: delivered, 413s, dead-letters, total time
// against the bound the limit imposes, the peak accepted requests in any minute against the limit.
// DEPENDS on the `peers` branch: the peer's per-rule limits (`limits: { requestsPerMinute }`); without them the peer
// enforces nothing and the figures say so (`limitEnforced: false`).
import { plainWorkerExecArgv } from "./worker-exec-argv.js";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import { nextWorkerMessage } from "./worker-messages.js";
import type { TransitionRecord } from "../../src/contract/record.js";
import { silentLogger } from "../../src/agent/observability/logger.js";
import { mintLocalToken } from "../../src/testbed/peers/local-tokens.js";
import { RulePauses } from "../../src/agent/sinks/loganalytics/rule-pauses.js";
import { logAnalyticsSettingsSchema } from "../../src/agent/sinks/loganalytics/settings.js";
import { LogAnalyticsSink } from "../../src/agent/sinks/loganalytics/sink.js";
import { defaultRetryPolicy, retryDelayMs } from "../../src/retry/policy.js";
import type { OutboxEntry } from "../../src/agent/delivery/outbox-entry.js";
import { transitionBacklog } from "./backlog.js";

export interface WaveOptions {
  readonly instances: number;
  readonly transitionsPerInstance: number;
  /** The wave: every instance sends its transitions at random moments of this window. */
  readonly windowMs: number;
  /** The rule's request limit per minute at the peer (Azure: 12,000). */
  readonly requestsPerMinute: number;
}

export interface WaveFigures {
  readonly instances: number;
  readonly requests: number;
  readonly requestsPerMinuteLimit: number;
  readonly delivered: number;
  readonly lost: number;
  readonly answers413: number;
  readonly deadLettered: number;
  readonly answers429: number;
  readonly totalSeconds: number;
  /** max(window, 60 s × requests / limit): the wave's own length, or the time the limit needs at its sustained rate. */
  readonly boundSeconds: number;
  readonly ratioToBound: number;
  /** Most requests the peer accepted within any 60 s (sampled every 100 ms; spans of at most 60 s). */
  readonly peakAcceptedPerMinute: number;
  /** Most requests that reached the peer (accepted or refused) within any 60 s: what the retries cost the service. */
  readonly peakArrivalsPerMinute: number;
  /** Whether the peer refused anything with 429 (false: it enforces no limit, see the header). */
  readonly limitEnforced: boolean;
}

const distPeer = pathToFileURL(
  fileURLToPath(new URL("../../src/testbed/dist/peers/logs-ingestion/index.js", import.meta.url)),
).href;

interface PeerSample {
  readonly atMs: number;
  readonly accepted: number;
  readonly arrived: number;
}

/** The peer in a worker thread, sampling its accepted and arrived request counts every 100 ms. */
async function startPeerWorker(requestsPerMinute: number): Promise<{
  endpoint: string;
  ruleId: string;
  caCertPath: string;
  finish(): Promise<{ rows: number; statuses: Record<string, number>; samples: PeerSample[] }>;
}> {
  const source = `
    const { parentPort, workerData } = require("node:worker_threads");
    import(workerData.distPeer).then(async ({ startLogsIngestionEmulator }) => {
      const peer = await startLogsIngestionEmulator({ limits: { requestsPerMinute: workerData.requestsPerMinute } });
      const accepted = () => Object.entries(peer.requests().statuses).filter(([s]) => /^2/.test(s)).reduce((n, [, c]) => n + c, 0);
      const samples = [];
      const sample = () => samples.push({ atMs: performance.now(), accepted: accepted(), arrived: peer.requests().count });
      const sampler = setInterval(sample, 100);
      parentPort.on("message", async (message) => {
        if (message !== "finish") return;
        clearInterval(sampler);
        sample();
        const result = { rows: peer.rows().length, statuses: { ...peer.requests().statuses }, samples };
        await peer.close();
        parentPort.postMessage({ kind: "finished", result });
      });
      parentPort.postMessage({ kind: "ready", endpoint: peer.endpoint, ruleId: peer.ruleId, caCertPath: peer.caCertPath });
    });`;
  const worker = new Worker(source, {
    eval: true,
    execArgv: plainWorkerExecArgv(),
    workerData: { distPeer, requestsPerMinute },
  });
  const next = (kind: string, timeoutMs: number): Promise<Record<string, unknown>> =>
    nextWorkerMessage(worker, kind, timeoutMs);
  const ready = await next("ready", 30_000);
  return {
    endpoint: String(ready.endpoint),
    ruleId: String(ready.ruleId),
    caCertPath: String(ready.caCertPath),
    finish: async () => {
      const finished = next("finished", 30_000);
      worker.postMessage("finish");
      const result = (await finished).result as {
        rows: number;
        statuses: Record<string, number>;
        samples: PeerSample[];
      };
      await worker.terminate();
      return result;
    },
  };
}

/**
 * Most requests counted by `count` within any span of at most 60 s between two samples (the counts before the first
 * sample are 0). Spans never exceed a minute: a span from the sample just outside the minute would count up to one
 * sampling interval too much and report a correct limiter as over its limit.
 */
function peakPerMinute(samples: readonly PeerSample[], count: (sample: PeerSample) => number): number {
  let peak = 0;
  let from = -1;
  const atMs = (index: number): number => (index < 0 ? samples[0]!.atMs - 100 : samples[index]!.atMs);
  const value = (index: number): number => (index < 0 ? 0 : count(samples[index]!));
  for (let to = 0; to < samples.length; to++) {
    while (atMs(to) - atMs(from) > 60_000) from++;
    peak = Math.max(peak, value(to) - value(from));
  }
  return peak;
}

export async function benchLogAnalyticsWave(options: WaveOptions): Promise<WaveFigures> {
  const { instances, transitionsPerInstance, windowMs, requestsPerMinute } = options;
  const peer = await startPeerWorker(requestsPerMinute);
  const settings = logAnalyticsSettingsSchema.parse({
    endpoint: peer.endpoint,
    ruleId: peer.ruleId,
    caCertFile: peer.caCertPath,
  });
  const credential = {
    getToken: async () => {
      const { token, claims } = mintLocalToken("https://monitor.azure.com");
      return { token, expiresOnTimestamp: claims.exp * 1000, tokenType: "Bearer" as const };
    },
  };
  const logger = silentLogger();
  const records = transitionBacklog(instances * transitionsPerInstance);
  let deadLettered = 0;
  let lost = 0;
  const start = performance.now();
  const runInstance = async (index: number): Promise<void> => {
    // Each agent is its own process in a real wave: its own client and its own throttling book.
    const sink = new LogAnalyticsSink({ settings, logger, credential, pauses: new RulePauses() });
    const mine = records.slice(index * transitionsPerInstance, (index + 1) * transitionsPerInstance);
    const times = mine.map(() => Math.random() * windowMs).sort((a, b) => a - b);
    try {
      for (const [k, entry] of mine.entries()) {
        await new Promise((r) => setTimeout(r, Math.max(0, start + times[k]! - performance.now())));
        const one: OutboxEntry = { seq: k + 1, record: entry.record as TransitionRecord, json: entry.json };
        let delivered = false;
        for (let attempt = 1; attempt <= 30 && !delivered; attempt++) {
          const result = (await sink.send([one], new AbortController().signal))[0]!;
          if (result.kind === "delivered") {
            delivered = true;
          } else if (result.kind === "rejected") {
            deadLettered++;
            delivered = true;
          } else {
            await new Promise((r) =>
              setTimeout(r, retryDelayMs(defaultRetryPolicy, attempt, result.afterMs, Math.random())),
            );
          }
        }
        if (!delivered) lost++;
      }
    } finally {
      await sink.close();
    }
  };
  await Promise.all(Array.from({ length: instances }, (_, i) => runInstance(i)));
  const totalSeconds = (performance.now() - start) / 1000;
  const peerResult = await peer.finish();
  const requests = instances * transitionsPerInstance;
  // The limit lets the rule take requestsPerMinute a minute, sustained: N requests need N / limit minutes, and the wave
  // itself lasts the window.
  const boundSeconds = Math.max(windowMs / 1000, (60 * requests) / requestsPerMinute);
  return {
    instances,
    requests,
    requestsPerMinuteLimit: requestsPerMinute,
    delivered: peerResult.rows,
    lost: Math.max(lost, requests - deadLettered - peerResult.rows),
    answers413: peerResult.statuses["413"] ?? 0,
    deadLettered,
    answers429: peerResult.statuses["429"] ?? 0,
    totalSeconds: Math.round(totalSeconds * 10) / 10,
    boundSeconds: Math.round(boundSeconds * 10) / 10,
    ratioToBound: Math.round((totalSeconds / boundSeconds) * 100) / 100,
    peakAcceptedPerMinute: peakPerMinute(peerResult.samples, (sample) => sample.accepted),
    peakArrivalsPerMinute: peakPerMinute(peerResult.samples, (sample) => sample.arrived),
    limitEnforced: (peerResult.statuses["429"] ?? 0) > 0,
  };
}

/** Defaults of `npm run bench` (env overrides): 2,000 agents × 3 transitions within 60 s, the rule limited to 3,000/min. */
export function waveOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): WaveOptions {
  return {
    instances: Number(env.SEF_BENCH_WAVE_INSTANCES ?? 2000),
    transitionsPerInstance: 3,
    windowMs: Number(env.SEF_BENCH_WAVE_WINDOW_MS ?? 60_000),
    requestsPerMinute: Number(env.SEF_BENCH_WAVE_REQUESTS_PER_MINUTE ?? 3000),
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  console.log(JSON.stringify(await benchLogAnalyticsWave(waveOptionsFromEnv()), null, 2));
  process.exit(0);
}
