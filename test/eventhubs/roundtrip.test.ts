// The Event Hubs sink against the local AMQP peer, read back with the real EventHubConsumerClient.
import { afterEach, describe, expect, it } from "vitest";
import { partitionForKey } from "../../src/agent/sinks/eventhubs/encode.js";
import {
  EventHubConsumerClient,
  EventHubProducerClient,
  earliestEventPosition,
  type ReceivedEventData,
} from "@azure/event-hubs";
import { silentLogger } from "../../src/agent/observability/logger.js";
import { startEventHubsEmulator, type EventHubsEmulator } from "../../src/testbed/peers/eventhubs/server.js";
import { EventHubsSink } from "../../src/agent/sinks/eventhubs/index.js";
import { entries, heartbeat, interleavedTransitions, sinkFor, tally, transition } from "./fixtures.js";
import { drainThroughLedger as drainUntilDone } from "../helpers/ledger-drain.js";

const cleanups: Array<() => Promise<void>> = [];
const emulators: EventHubsEmulator[] = [];
afterEach(async () => {
  const rejectedSends = emulators.splice(0).map((emulator) => emulator.stats.sendsRejected);
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  // What Azure would refuse: no send of the sink may have been rejected (over the size limit, or to an unknown entity).
  expect(rejectedSends.filter((n) => n > 0)).toEqual([]);
});

async function peer(options: { maxMessageSize?: number; partitionCount?: number } = {}): Promise<EventHubsEmulator> {
  const emulator = await startEventHubsEmulator({ hubName: "sef-records", ...options });
  emulators.push(emulator);
  cleanups.push(() => emulator.close());
  return emulator;
}

function sink(emulator: EventHubsEmulator, overrides: Record<string, unknown> = {}): EventHubsSink {
  const s = sinkFor(emulator.connectionString, overrides);
  cleanups.push(() => s.close());
  return s;
}

/** Reads `count` events from every partition from the start, with the real consumer client. */
async function readBack(
  emulator: EventHubsEmulator,
  count: number,
): Promise<Array<ReceivedEventData & { partitionId: string }>> {
  const consumer = new EventHubConsumerClient("$Default", emulator.connectionString);
  const received: Array<ReceivedEventData & { partitionId: string }> = [];
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`read ${received.length}/${count} events`)), 15_000);
      const subscription = consumer.subscribe(
        {
          processEvents: async (events, context) => {
            for (const event of events) received.push({ ...event, partitionId: context.partitionId });
            if (received.length >= count) {
              clearTimeout(timer);
              await subscription.close();
              resolve();
            }
          },
          processError: async () => undefined,
        },
        { startPosition: earliestEventPosition, maxBatchSize: 500, maxWaitTimeInSeconds: 0.2 },
      );
    });
  } finally {
    await consumer.close();
  }
  return received;
}

describe("eventhubs sink → local peer → EventHubConsumerClient", () => {
  it("round-trips body, messageId and application properties, keeping each event's transitions in order", async () => {
    const emulator = await peer({ partitionCount: 4 });
    const records = [...interleavedTransitions(20), heartbeat(1)];
    const outbox = entries(records);
    const s = sink(emulator);
    const result = await s.send(outbox, new AbortController().signal);
    expect(tally(result)).toEqual({ delivered: records.length, retry: 0, rejected: 0 });

    const received = await readBack(emulator, records.length);
    expect(received).toHaveLength(records.length);
    const byId = new Map(received.map((e) => [e.messageId, e]));
    for (const record of records) {
      const event = byId.get(record.RecordId);
      expect(event, record.RecordId).toBeDefined();
      expect(event!.body).toEqual(record);
      expect(event!.contentType).toBe("application/json");
      expect(event!.properties).toEqual({
        RecordType: record.RecordType,
        EventStatus: record.RecordType === "Transition" ? record.EventStatus : "",
        EventType: record.RecordType === "Transition" ? record.EventType : "",
        VmId: record.VmId,
      });
      expect(event!.partitionKey).toBe(record.RecordType === "Transition" ? record.EventId : record.VmId);
    }
    // Per EventId: one partition, and the statuses in the order they were emitted.
    const perEvent = new Map<string, { partitions: Set<string>; statuses: string[] }>();
    for (const event of [...received].sort((a, b) => a.sequenceNumber - b.sequenceNumber)) {
      const body = event.body as { EventId?: string; EventStatus?: string; RecordType: string };
      if (body.RecordType !== "Transition") continue;
      const entry = perEvent.get(body.EventId!) ?? { partitions: new Set(), statuses: [] };
      entry.partitions.add(event.partitionId);
      entry.statuses.push(body.EventStatus!);
      perEvent.set(body.EventId!, entry);
    }
    expect(perEvent.size).toBe(20);
    for (const [, entry] of perEvent) {
      expect(entry.partitions.size).toBe(1);
      expect(entry.statuses).toEqual(["Scheduled", "Started", "Completed"]);
    }
    // Events spread over more than one partition.
    expect(new Set(received.map((e) => e.partitionId)).size).toBeGreaterThan(1);
  });

  it("splits a send into batches at the advertised max message size (256 KiB Basic tier)", async () => {
    const emulator = await peer({ maxMessageSize: 256 * 1024, partitionCount: 1 });
    // One event, 40 transitions of ~20 KiB each (same key): ~800 KiB cannot fit one 256 KiB batch.
    const padding = "x".repeat(20_000);
    const records = Array.from({ length: 40 }, (_, i) =>
      transition("EV-BIG", i % 2 === 0 ? "Scheduled" : "Started", i, padding),
    ).map((r, i) => ({
      ...r,
      RecordId: `${r.RecordId}-${i}`,
    }));
    const s = sink(emulator);
    expect(tally(await s.send(entries(records), new AbortController().signal))).toMatchObject({
      retry: 0,
      rejected: 0,
    });
    expect(emulator.stats.sendsAccepted).toBeGreaterThanOrEqual(4);
    const stored = emulator.events();
    expect(stored.map((e) => e.messageId)).toEqual(records.map((r) => r.RecordId));
  });

  it("dead-letters a single record bigger than the max message size and still sends the others", async () => {
    const emulator = await peer({ maxMessageSize: 256 * 1024 });
    const records = interleavedTransitions(3);
    const huge = transition("EV-HUGE", "Scheduled", 99, "y".repeat(300 * 1024));
    const outbox = entries([records[0]!, huge, ...records.slice(1)]);
    const result = await sink(emulator).send(outbox, new AbortController().signal);
    expect(result[1]).toEqual({
      kind: "rejected",
      reason: expect.stringMatching(/does not fit in one event \(max message size \d+ bytes\)/),
    });
    expect(tally(result)).toEqual({ delivered: outbox.length - 1, retry: 0, rejected: 1 });
    expect(
      emulator
        .events()
        .map((e) => e.messageId)
        .sort(),
    ).toEqual(records.map((r) => r.RecordId).sort());
  });

  it("honours partitionKeyField VmId and none", async () => {
    const emulator = await peer({ partitionCount: 4 });
    const records = interleavedTransitions(4);
    await drainUntilDone(sink(emulator, { partitionKeyField: "VmId" }), entries(records));
    expect(new Set(emulator.events().map((e) => e.partitionKey))).toEqual(new Set([records[0]!.VmId]));
    const other = await peer({ partitionCount: 4 });
    await drainUntilDone(sink(other, { partitionKeyField: "none" }), entries(records));
    expect(other.events().every((e) => e.partitionKey === undefined)).toBe(true);
    expect(other.events()).toHaveLength(records.length);
  });

  it("with hash routing sends whole-partition batches and keeps every event's transitions in order on one partition", async () => {
    const emulator = await peer({ partitionCount: 4 });
    const records = interleavedTransitions(40);
    const s = sink(emulator, { partitionRouting: "hash" });
    expect(tally(await s.send(entries(records), new AbortController().signal))).toMatchObject({
      retry: 0,
      rejected: 0,
    });
    // 120 records of 40 events in at most one batch per partition, not one per event.
    expect(emulator.stats.sendsAccepted).toBeLessThanOrEqual(4);
    const ids = ["0", "1", "2", "3"];
    for (const eventId of new Set(records.map((r) => r.EventId))) {
      const stored = emulator.events().filter((e) => JSON.parse(String(e.body)).EventId === eventId);
      expect(new Set(stored.map((e) => e.partitionId))).toEqual(new Set([partitionForKey(eventId, ids)]));
      expect(stored.map((e) => JSON.parse(String(e.body)).EventStatus)).toEqual(
        records.filter((r) => r.EventId === eventId).map((r) => r.EventStatus),
      );
    }
    expect(new Set(emulator.events().map((e) => e.partitionId)).size).toBeGreaterThan(1);
    // Key routing (the service assigns the partition from the key) places every event exactly where hash routing did.
    const keyed = await peer({ partitionCount: 4 });
    expect(tally(await sink(keyed).send(entries(records), new AbortController().signal))).toMatchObject({
      retry: 0,
      rejected: 0,
    });
    const placement = (events: ReturnType<typeof emulator.events>) =>
      new Map(events.map((e) => [JSON.parse(String(e.body)).RecordId as string, e.partitionId]));
    expect(placement(keyed.events())).toEqual(placement(emulator.events()));
  });

  it("with hash routing follows a partition count raised on the hub, once the ids it read are 10 s old", async () => {
    const emulator = await peer({ partitionCount: 2 });
    let nowMs = 1_700_000_000_000;
    const s = new EventHubsSink({
      producer: new EventHubProducerClient(emulator.connectionString),
      logger: silentLogger(),
      partitionKeyField: "EventId",
      partitionRouting: "hash",
      maxBatchRecords: 2000,
      lingerMs: 0,
      maxConcurrentBatches: 16,
      now: () => nowMs,
    });
    cleanups.push(() => s.close());
    const signal = new AbortController().signal;
    expect(tally(await s.send(entries(interleavedTransitions(10)), signal))).toMatchObject({ retry: 0, rejected: 0 });
    expect(new Set(emulator.events().map((e) => e.partitionId))).toEqual(new Set(["0", "1"]));

    emulator.scalePartitions(8);
    nowMs += 10_000;
    const later = Array.from({ length: 24 }, (_, i) => transition(`LATER-${i}`, "Scheduled", i));
    expect(tally(await s.send(entries(later, 100), signal))).toMatchObject({ retry: 0, rejected: 0 });
    const ids = ["0", "1", "2", "3", "4", "5", "6", "7"];
    const landed = emulator.events().filter((e) => JSON.parse(String(e.body)).EventId.startsWith("LATER-"));
    expect(landed.map((e) => e.partitionId)).toEqual(
      landed.map((e) => partitionForKey(JSON.parse(String(e.body)).EventId, ids)),
    );
    // Some keys now map to the new partitions, as the service itself routes them with key routing.
    expect(landed.some((e) => Number(e.partitionId) >= 2)).toBe(true);
    const keyed = await peer({ partitionCount: 8 });
    expect(tally(await sink(keyed).send(entries(later, 100), signal))).toMatchObject({ retry: 0, rejected: 0 });
    const placement = (events: ReturnType<typeof emulator.events>) =>
      new Map(events.map((e) => [JSON.parse(String(e.body)).RecordId as string, e.partitionId]));
    expect(placement(landed)).toEqual(placement(keyed.events()));
  });
});
