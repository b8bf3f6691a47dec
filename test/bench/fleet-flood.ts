// `sef-fleet` under a flood of forged EventIds (issue 47): one instance, 4 partitions; real VMs report events before,
// during and after 100,000 records with invented EventIds and invented reporters, each on the partition its EventId
// hashes to. Reports the instance's RSS and heap as the flood is read (bounded?), apart from the bench process that holds
// the peers (which keep what they are sent), and the real events' paging latency (p99 as usual?).
import { readFileSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import { partitionIndexForKey } from "../../src/contract/partition-hash.js";
import { startCluster, type Cluster, type InstanceTargets } from "../fleet/cluster.js";
import { fleetTransition, vm } from "../fleet/records.js";
import { metricValue } from "../helpers/metrics.js";
import { percentile } from "./agent-latency.js";
import { plainWorkerExecArgv } from "./worker-exec-argv.js";
import { nextWorkerMessage } from "./worker-messages.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const partitions = 4;

export interface FleetFloodResult {
  forged: number;
  /** Records a second the flood was paced at (0: as fast as the peer took them). */
  floodRate: number;
  floodSendMs: number;
  realBefore: { count: number; p50Ms: number; p99Ms: number; maxMs: number };
  realDuring: { sent: number; count: number; p50Ms: number; p99Ms: number; maxMs: number };
  /** The `sef-fleet` process alone (the notification peer runs in a worker of the bench process: `benchProcessRssMb`). */
  rssMb: { before: number; peak: number; after: number };
  /** The fleet's RSS and V8 heap in use when it had read (folded or dropped) this many forged records. */
  atRecordsRead: Array<{ read: number; rssMb: number; heapUsedMb: number }>;
  /** The bench process: the notification peer and the real VMs' producer (the Event Hubs peer is a process of its own). */
  benchProcessRssMb: { before: number; after: number };
  forgedFolded: number;
  forgedDropped: Record<string, number>;
  activeEventsAfter: number;
  /** Reporters the fleet remembers after the flood, and those it forgot for want of room (at most 50,000). */
  knownReportersAfter: number;
  reportersForgotten: number;
  loadAverage: { start: number[]; end: number[] };
  targetP99Ms: number;
}

function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return Math.round(Number(m?.[1] ?? 0) / 102.4) / 10;
}

const processRssMb = () => Math.round(process.memoryUsage().rss / 104_857.6) / 10;

/** The counts of forged records read at which the fleet's memory is reported. */
const checkpoints = (forged: number) => [0.25, 0.5, 0.75, 1].map((f) => Math.round(forged * f));

/** Records read so far (folded or dropped by a bound) in a /metrics exposition. */
const recordsRead = (text: string) =>
  ["folded", "partition-rate-limited", "rate-limited", "partition-full"].reduce((sum, outcome) => {
    try {
      return sum + metricValue(text, "sef_fleet_records_total", { outcome });
    } catch {
      return sum;
    }
  }, 0);

const realId = (n: number) => `4ea10000-0000-4000-8000-${String(n).padStart(12, "0")}`;
const forgedId = (n: number) => `f0e6ed00-0000-4000-8000-${String(n).padStart(12, "0")}`;

/** A PagerDuty request the notification peer took: the dedup key, and when it arrived (its wall clock). */
interface PagedAt {
  readonly dedupKey?: string;
  readonly receivedAtMs: number;
}

/** Sends `count` real events (`gapMs` apart) from 20 real VMs and resolves with each one's time from sending to its PagerDuty trigger. */
async function pageReal(
  cluster: Cluster,
  paged: () => Promise<readonly PagedAt[]>,
  first: number,
  count: number,
  gapMs: number,
  timeoutMs: number,
): Promise<number[]> {
  const sentAt = new Map<string, number>();
  for (let i = 0; i < count; i++) {
    const id = realId(first + i);
    const reporter = vm(i % 20);
    sentAt.set(id, Date.now());
    await cluster.send([fleetTransition(id, "Scheduled", reporter, [reporter])]);
    await sleep(gapMs);
  }
  const deadline = Date.now() + timeoutMs;
  const latencies = new Map<string, number>();
  while (latencies.size < count && Date.now() < deadline) {
    for (const r of await paged()) {
      const key = r.dedupKey;
      if (key !== undefined && sentAt.has(key) && !latencies.has(key))
        latencies.set(key, r.receivedAtMs - sentAt.get(key)!);
    }
    await sleep(50);
  }
  return [...latencies.values()];
}

const distNotifyPeer = pathToFileURL(
  fileURLToPath(new URL("../../src/testbed/dist/peers/notify/server.js", import.meta.url)),
).href;

/** The notification peer on an event loop of its own (a worker thread): the PagerDuty target is another machine. */
interface NotifyPeerWorker {
  readonly targets: InstanceTargets;
  /** The PagerDuty requests it took so far. */
  paged(): Promise<readonly PagedAt[]>;
  close(): Promise<void>;
}

/**
 * Starts the notification peer in a worker thread: on the bench's event loop (the real VMs' sender, the samplers) the
 * time it stamped on a request arriving was the bench's, not the fleet's.
 */
async function startNotifyPeerWorker(): Promise<NotifyPeerWorker> {
  const source = `
    const { parentPort, workerData } = require("node:worker_threads");
    import(workerData.distNotifyPeer).then(async ({ startNotifyPeer }) => {
      const peer = await startNotifyPeer();
      let reported = 0;
      parentPort.on("message", async (message) => {
        if (message === "paged") {
          const all = peer.requests("pagerduty");
          const fresh = all.slice(reported).map((r) => ({ dedupKey: r.body?.dedup_key, receivedAtMs: r.receivedAtMs }));
          reported = all.length;
          parentPort.postMessage({ kind: "paged", fresh });
        }
        if (message === "close") { await peer.close(); parentPort.postMessage({ kind: "closed" }); }
      });
      parentPort.postMessage({ kind: "ready", url: peer.url });
    });`;
  const worker = new Worker(source, { eval: true, execArgv: plainWorkerExecArgv(), workerData: { distNotifyPeer } });
  const url = String((await nextWorkerMessage(worker, "ready")).url);
  const seen: PagedAt[] = [];
  return {
    targets: { pagerDutyUrl: `${url}/v2/enqueue`, slackUrl: `${url}/slack/services/T0/B0/X` },
    paged: async () => {
      const answer = nextWorkerMessage(worker, "paged");
      worker.postMessage("paged");
      seen.push(...((await answer).fresh as PagedAt[]));
      return seen;
    },
    close: async () => {
      const closed = nextWorkerMessage(worker, "closed");
      worker.postMessage("close");
      await closed;
      await worker.terminate();
    },
  };
}

/** 100,000 (or `forged`) records with invented EventIds and reporters, each with the partition its EventId hashes to. */
function forgedRecords(forged: number): Array<{ partition: number; body: unknown }> {
  return Array.from({ length: forged }, (_, i) => {
    const id = forgedId(i);
    const rogue = vm(100_000 + i, "rogue");
    return { partition: partitionIndexForKey(id, partitions), body: fleetTransition(id, "Scheduled", rogue, [rogue]) };
  });
}

/**
 * The flood's rate, records a second: 1,000 by default, what one throughput unit of Event Hubs takes in (the namespace
 * `bicep/modules/eventhubs.bicep` deploys: Standard, capacity 1, no auto-inflate; the service answers server-busy
 * beyond it, whoever sends). `SEF_BENCH_FLEET_FLOOD_RATE=0` sends as fast as the peer takes them (it has no quota).
 */
export const floodRate = (): number => Number(process.env.SEF_BENCH_FLEET_FLOOD_RATE ?? 1000);

/**
 * Sends the forged records from a worker thread (the flooding VMs are other machines: their encoding must not hold up
 * the event loop that runs the real VMs' sender and the peers): every 100 ms a tenth of a second's records at `rate`
 * (one batch per partition; a tick that falls behind is caught up at once), or with `rate` 0 each partition's records
 * in batches as full as they go.
 */
async function flood(connectionString: string, records: Array<{ partition: number; body: unknown }>, rate: number) {
  const source = `
    const { parentPort, workerData } = require("node:worker_threads");
    const { EventHubProducerClient } = require("@azure/event-hubs");
    const { records, rate, partitions } = workerData;
    const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
    async function sendAll(producer, partition, bodies) {
      let batch = await producer.createBatch({ partitionId: String(partition) });
      for (const body of bodies) {
        if (batch.tryAdd({ body })) continue;
        await producer.sendBatch(batch);
        batch = await producer.createBatch({ partitionId: String(partition) });
        if (!batch.tryAdd({ body })) throw new Error("a record larger than a batch");
      }
      if (batch.count > 0) await producer.sendBatch(batch);
    }
    const byPartition = (slice) =>
      Array.from({ length: partitions }, (_, p) => slice.filter((r) => r.partition === p).map((r) => r.body));
    (async () => {
      const producer = new EventHubProducerClient(workerData.connectionString);
      try {
        if (rate === 0) {
          await Promise.all(byPartition(records).map((bodies, p) => sendAll(producer, p, bodies)));
        } else {
          const perTick = Math.max(1, Math.round(rate / 10));
          const start = performance.now();
          for (let tick = 0; tick * perTick < records.length; tick++) {
            const slice = records.slice(tick * perTick, (tick + 1) * perTick);
            await Promise.all(byPartition(slice).map((bodies, p) => sendAll(producer, p, bodies)));
            const wait = start + (tick + 1) * 100 - performance.now();
            if (wait > 0) await sleep(wait);
          }
        }
        parentPort.postMessage({ kind: "sent" });
      } catch (err) {
        parentPort.postMessage({ kind: "sent", error: String(err) });
      } finally {
        await producer.close();
      }
    })();`;
  const worker = new Worker(source, {
    eval: true,
    execArgv: plainWorkerExecArgv(),
    workerData: { connectionString, records, rate, partitions },
  });
  try {
    const done = await nextWorkerMessage(worker, "sent", 600_000);
    if (done.error !== undefined) throw new Error(`flood: ${String(done.error)}`);
  } finally {
    await worker.terminate();
  }
}

/**
 * `samples` real events before the flood and as many during it: 200 each, so a p99 is not just the slowest one (with
 * 40, one event's stall was the p99).
 */
export async function benchFleetFlood(forged = 100_000, samples = 200): Promise<FleetFloodResult> {
  const loadStart = loadavg();
  // The real VMs report before the flood; they count as known reporters after `reporterKnownAfterMs` (1 h by default,
  // 10 s here so the bench need not wait an hour).
  const knownAfterMs = 10_000;
  const notify = await startNotifyPeerWorker();
  const cluster = await startCluster({
    instances: 1,
    targetsOf: () => notify.targets,
    partitions,
    ownershipExpirationMs: 60_000,
    bounds: { reporterKnownAfterMs: knownAfterMs },
    // The peer that carries the flood on an event loop of its own (the service is another machine): here it would
    // hold up the notification peer's clock and the real VMs' sends, on the bench's loop.
    hubProcess: true,
    // The service's default re-plan interval (the cluster's tests use 500 ms): a re-plan visits every open event.
    tickMs: 5_000,
  });
  try {
    const instance = cluster.instances[0]!;
    const pid = instance.child.pid!;
    const metrics = async () => (await fetch(`${instance.metricsUrl}/metrics`)).text();
    const deadline = Date.now() + 60_000;
    while (metricValue(await metrics(), "sef_fleet_owned_partitions") < partitions && Date.now() < deadline)
      await sleep(200);
    const before = await pageReal(cluster, notify.paged, 0, samples, 50, 30_000);
    await sleep(knownAfterMs);
    const rssBefore = rssMb(pid);
    const benchRssBefore = processRssMb();
    let peak = rssBefore;
    let sampling = true;
    const atRecordsRead: FleetFloodResult["atRecordsRead"] = [];
    const pending = checkpoints(forged);
    const sampler = (async () => {
      for (let round = 0; sampling; round++) {
        const { exitCode, signalCode } = instance.child;
        if (exitCode !== null || signalCode !== null)
          throw new Error(`sef-fleet exited (${exitCode ?? signalCode}): ${instance.stderr().slice(-3000)}`);
        const rss = rssMb(pid);
        peak = Math.max(peak, rss);
        // The fleet's /metrics every 500 ms (RSS every 100 ms): how far it has read, and its heap.
        const text = pending.length > 0 && round % 5 === 0 ? await metrics() : "";
        const read = text === "" ? 0 : recordsRead(text) - 2 * samples;
        if (text !== "" && pending.length > 0 && read >= pending[0]!) {
          pending.shift();
          const heapUsedMb = Math.round(metricValue(text, "sef_fleet_nodejs_heap_size_used_bytes") / 104_857.6) / 10;
          atRecordsRead.push({ read, rssMb: rss, heapUsedMb });
        }
        await sleep(100);
      }
    })();
    const rate = floodRate();
    const forgedInOrder = forgedRecords(forged);
    const floodStart = Date.now();
    const flooding = flood(cluster.hub.connectionString, forgedInOrder, rate);
    // The real events spread over the flood's length at its rate (250 ms apart when it goes as fast as it can).
    const gapMs = rate === 0 ? 250 : Math.max(250, Math.floor((forged / rate) * 1000) / samples);
    const during = pageReal(cluster, notify.paged, 1000, samples, gapMs, 120_000);
    await flooding;
    const floodSendMs = Date.now() - floodStart;
    const duringLatencies = await during;
    // Wait until every forged record was read (folded or dropped), then let the process settle.
    const readDeadline = Date.now() + 180_000;
    while (recordsRead(await metrics()) < forged + 2 * samples && Date.now() < readDeadline) await sleep(500);
    await sleep(2000);
    sampling = false;
    await sampler;
    const text = await metrics();
    const count = (outcome: string) => {
      try {
        return metricValue(text, "sef_fleet_records_total", { outcome });
      } catch {
        return 0;
      }
    };
    const summary = (values: number[]) => ({
      count: values.length,
      p50Ms: percentile(values, 50),
      p99Ms: percentile(values, 99),
      maxMs: Math.max(...values),
    });
    return {
      forged,
      floodRate: rate,
      floodSendMs,
      realBefore: summary(before),
      realDuring: { sent: samples, ...summary(duringLatencies) },
      rssMb: { before: rssBefore, peak, after: rssMb(pid) },
      atRecordsRead,
      benchProcessRssMb: { before: benchRssBefore, after: processRssMb() },
      forgedFolded: count("folded") - 2 * samples,
      forgedDropped: Object.fromEntries(
        ["partition-rate-limited", "rate-limited", "partition-full"].map((o) => [o, count(o)]),
      ),
      activeEventsAfter: metricValue(text, "sef_fleet_active_events"),
      knownReportersAfter: metricValue(text, "sef_fleet_known_reporters"),
      reportersForgotten: metricValue(text, "sef_fleet_reporters_forgotten_total"),
      loadAverage: { start: loadStart, end: loadavg() },
      targetP99Ms: 5000,
    };
  } finally {
    await cluster.stop();
    await notify.close();
    // The instance's log lines (SEF_BENCH_FLEET_LOG_LEVEL=info adds one per notification sent), for a diagnosis.
    if (process.env.SEF_BENCH_FLEET_FLOOD_LOG)
      writeFileSync(process.env.SEF_BENCH_FLEET_FLOOD_LOG, cluster.instances[0]!.stderr());
  }
}

if (import.meta.url === `file://${process.argv[1]}`)
  console.log(
    JSON.stringify(
      await benchFleetFlood(
        Number(process.argv[2] ?? 100_000),
        Number(process.env.SEF_BENCH_FLEET_FLOOD_SAMPLES ?? 200),
      ),
      null,
      2,
    ),
  );
