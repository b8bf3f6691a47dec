// Benchmark: drains a backlog of transition records to the local Event Hubs peer through the Event Hubs sink
// (real EventHubProducerClient, AMQP, partition key = EventId) with the real store and drainer (ledger-drain.ts); and, as the
// reference, the bare SDK sending the same backlog as one keyed EventDataBatch per EventId with nothing of sef around it.
// The peer runs as its own process (`sef-testbed emulate eventhubs`), like the service; delivery is checked with the real consumer.
import { pathToFileURL } from "node:url";
import type { TransitionRecord } from "../../src/contract/record.js";
import { transitionBacklog } from "./backlog.js";
import { EventHubConsumerClient, EventHubProducerClient } from "@azure/event-hubs";
import { startEventHubsPeerProcess } from "../helpers/eventhubs-peer-process.js";
import { silentLogger } from "../../src/agent/observability/logger.js";
import { createEventHubsSink, eventHubsSettingsSchema } from "../../src/agent/sinks/eventhubs/index.js";
import { toEventData } from "../../src/agent/sinks/eventhubs/encode.js";
import type { OutboxEntry } from "../../src/agent/delivery/outbox-entry.js";
import { drainBacklogThroughLedger } from "./ledger-drain.js";

/** Events stored by the hub, read through the real consumer client's partition properties. */
async function storedEvents(connectionString: string): Promise<number> {
  const consumer = new EventHubConsumerClient("$Default", connectionString);
  try {
    let total = 0;
    for (const id of await consumer.getPartitionIds()) {
      const p = await consumer.getPartitionProperties(id);
      if (!p.isEmpty) total += p.lastEnqueuedSequenceNumber - p.beginningSequenceNumber + 1;
    }
    return total;
  } finally {
    await consumer.close();
  }
}

export interface DrainFigures {
  readonly recordsPerSecond: number;
  readonly megabytesPerSecond: number;
  readonly records: number;
  readonly seconds: number;
  /** CPU time of this process (user + system) per record during the drain, in microseconds. */
  readonly cpuMicrosecondsPerRecord: number;
}

/** Runs `drain` over the backlog after `warmUp` (opening the link), timing only the drain, then checks the hub stored every record. */
async function measureDrain(
  records: number,
  start: (connectionString: string) => {
    warmUp(outbox: readonly OutboxEntry[]): Promise<void>;
    drain(outbox: readonly OutboxEntry[]): Promise<number | void>;
    close(): Promise<void>;
  },
): Promise<DrainFigures> {
  const outbox = transitionBacklog(records);
  const bytes = outbox.reduce((sum, e) => sum + Buffer.byteLength(e.json), 0);
  const peer = await startEventHubsPeerProcess("sef-bench", 4);
  const client = start(peer.connectionString);
  try {
    await client.warmUp(outbox);
    const startedMs = performance.now();
    const cpuBefore = process.cpuUsage();
    const drainSeconds = await client.drain(outbox);
    const cpu = process.cpuUsage(cpuBefore);
    // A drain through the ledger reports its own time (without filling the store); its CPU figure includes the filling.
    const seconds = typeof drainSeconds === "number" ? drainSeconds : (performance.now() - startedMs) / 1000;
    const stored = await storedEvents(peer.connectionString);
    if (stored < records) throw new Error(`peer stored ${stored} of ${records} records`);
    return {
      recordsPerSecond: Math.round((records - 1) / seconds),
      megabytesPerSecond: Number((bytes / 1e6 / seconds).toFixed(2)),
      records,
      seconds: Number(seconds.toFixed(3)),
      cpuMicrosecondsPerRecord: Math.round((cpu.user + cpu.system) / (records - 1)),
    };
  } finally {
    await client.close();
    await peer.close();
  }
}

/** Drains `records` records to the peer process through the sink; the figures cover the drain only (not building the backlog). */
export async function benchEventHubsDrain(
  records = 100_000,
  partitionRouting: "key" | "hash" = "key",
): Promise<DrainFigures> {
  return measureDrain(records, (connectionString) => {
    const sink = createEventHubsSink(
      eventHubsSettingsSchema.parse({ connectionString, partitionRouting }),
      { logger: silentLogger() },
      {},
    );
    const signal = new AbortController().signal;
    return {
      // Open the link first (connection + $cbs), as a running agent would have.
      warmUp: async (outbox) => void (await sink.send(outbox.slice(0, 1), signal)),
      drain: async (outbox) => (await drainBacklogThroughLedger(sink, outbox.slice(1))).seconds,
      close: () => sink.close(),
    };
  });
}

/**
 * The reference for key routing: the bare SDK sends the backlog as one `EventDataBatch` per EventId (partition key =
 * EventId), `concurrency` sends in flight, no store, sink or drain loop. Whatever sef adds is the gap to this figure.
 */
export async function benchEventHubsBareSdkKeyed(records = 100_000, concurrency = 128): Promise<DrainFigures> {
  return measureDrain(records, (connectionString) => {
    const producer = new EventHubProducerClient(connectionString);
    const sendKeyed = async (key: string, entries: readonly OutboxEntry[]): Promise<void> => {
      const batch = await producer.createBatch({ partitionKey: key });
      for (const entry of entries)
        if (!batch.tryAdd(toEventData(entry))) throw new Error("a bench record does not fit in a batch");
      await producer.sendBatch(batch);
    };
    return {
      warmUp: (outbox) => sendKeyed("warm-up", outbox.slice(0, 1)),
      drain: async (outbox) => {
        const byEventId = new Map<string, OutboxEntry[]>();
        for (const entry of outbox.slice(1)) {
          const key = (entry.record as TransitionRecord).EventId;
          const group = byEventId.get(key);
          if (group) group.push(entry);
          else byEventId.set(key, [entry]);
        }
        const groups = [...byEventId];
        let next = 0;
        const worker = async (): Promise<void> => {
          while (next < groups.length) {
            const [key, entries] = groups[next++]!;
            await sendKeyed(key, entries);
          }
        };
        await Promise.all(Array.from({ length: concurrency }, worker));
      },
      close: () => producer.close(),
    };
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const records = Number(process.argv[2] ?? 100_000);
  const mode = process.argv[3] ?? "key";
  console.log(
    JSON.stringify(
      mode === "bare"
        ? await benchEventHubsBareSdkKeyed(records)
        : await benchEventHubsDrain(records, mode === "hash" ? "hash" : "key"),
    ),
  );
}
