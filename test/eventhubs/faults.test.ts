// Failure handling of the Event Hubs sink against the local peer's injected faults, drained through the real ledger and
// drainer: nothing is lost, per-record outcomes are honest, what the hub accepted is not sent again, duplicates
// (in-doubt sends) carry the same messageId, and too-large/quota records are dead-lettered.
import { afterEach, describe, expect, it } from "vitest";
import { startEventHubsEmulator, type EventHubsEmulator } from "../../src/testbed/peers/eventhubs/server.js";
import type { EventHubsSink } from "../../src/agent/sinks/eventhubs/index.js";
import type { TransitionRecord } from "../../src/contract/record.js";
import { entries, interleavedTransitions, sinkFor, tally, transition } from "./fixtures.js";
import { drainThroughLedger as drainUntilDone } from "../helpers/ledger-drain.js";

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function peer(partitionCount = 2): Promise<EventHubsEmulator> {
  const emulator = await startEventHubsEmulator({ hubName: "sef-faults", partitionCount });
  cleanups.push(() => emulator.close());
  return emulator;
}

/** A detached link or dropped connection leaves the in-flight send to the SDK's per-try timeout: keep it short here. */
function sink(emulator: EventHubsEmulator, overrides: Record<string, unknown> = {}): EventHubsSink {
  const s = sinkFor(emulator.connectionString, { tryTimeoutMs: 1000, ...overrides });
  cleanups.push(() => s.close());
  return s;
}

/** Two transitions per event, grouped by event: key groups are contiguous runs of the batch. */
function groupedTransitions(events: number): TransitionRecord[] {
  return Array.from({ length: events }, (_, e) => [
    transition(`EV-${e}`, "Scheduled", 2 * e),
    transition(`EV-${e}`, "Started", 2 * e + 1),
  ]).flat();
}

/** Every record stored at least once, only records we sent, and per EventId the first sightings in emitted order. */
function expectAllDelivered(
  emulator: EventHubsEmulator,
  records: readonly TransitionRecord[],
  exactlyOnce: boolean,
): void {
  const stored = emulator.events();
  const ids = stored.map((e) => e.messageId);
  expect(new Set(ids)).toEqual(new Set(records.map((r) => r.RecordId)));
  if (exactlyOnce) expect(ids).toHaveLength(records.length);
  const eventOf = new Map(records.map((r) => [r.RecordId, r.EventId]));
  for (const eventId of new Set(records.map((r) => r.EventId))) {
    const firstSeen: string[] = [];
    for (const event of stored)
      if (eventOf.get(event.messageId!) === eventId && !firstSeen.includes(event.messageId!))
        firstSeen.push(event.messageId!);
    expect(firstSeen).toEqual(records.filter((r) => r.EventId === eventId).map((r) => r.RecordId));
    // One event's transitions all land on one partition.
    expect(new Set(stored.filter((e) => eventOf.get(e.messageId!) === eventId).map((e) => e.partitionId)).size).toBe(1);
  }
}

describe("eventhubs sink under injected faults", () => {
  it("server-busy: returns retryable with the server's pace, then delivers everything exactly once", async () => {
    const emulator = await peer();
    const records = groupedTransitions(5);
    const s = sink(emulator, { maxConcurrentBatches: 1 });
    emulator.faults.failNextSends(1, "server-busy");
    const { results } = await drainUntilDone(s, entries(records));
    expect(results[0]![0]).toMatchObject({
      kind: "retry",
      reason: expect.stringContaining("ServerBusyError"),
      afterMs: 4000,
    });
    expect(tally(results.at(-1)!)).toMatchObject({ retry: 0, rejected: 0 });
    expectAllDelivered(emulator, records, true);
  });

  it("reports the entries already sent as delivered when a later batch fails", async () => {
    const emulator = await peer();
    const records = groupedTransitions(4);
    const s = sink(emulator, { maxConcurrentBatches: 1 });
    emulator.faults.planSends(["ok", "server-busy"]);
    const first = await s.send(entries(records), new AbortController().signal);
    expect(first.map((o) => o.kind)).toEqual(["delivered", "delivered", ...Array.from({ length: 6 }, () => "retry")]);
    expect(emulator.events().map((e) => e.messageId)).toEqual([records[0]!.RecordId, records[1]!.RecordId]);
    const rest = await s.send(entries(records.slice(2), 3), new AbortController().signal);
    expect(tally(rest)).toEqual({ delivered: 6, retry: 0, rejected: 0 });
    expectAllDelivered(emulator, records, true);
  });

  // With 2 in flight nothing is in doubt when the connection drops; with 128 a drop could catch accepted sends whose
  // disposition is still on the wire (duplicates, same messageId), so that case uses a definite refusal.
  it.each([
    [2, "drop-connection"],
    [128, "server-busy"],
  ] as const)(
    "interleaved keys, %i in flight, %s mid-send: the retry skips what the hub already accepted",
    async (maxConcurrentBatches, fault) => {
      const emulator = await peer();
      const records = interleavedTransitions(6);
      const s = sink(emulator, { maxConcurrentBatches });
      emulator.faults.planSends(["ok", "ok", "ok", fault]);
      const { results } = await drainUntilDone(s, entries(records));
      // Whole key groups were accepted (their records are spread over the batch); the retry carries only the rest.
      const first = tally(results[0]!);
      expect(first.retry).toBeGreaterThan(0);
      expect(first.delivered).toBeGreaterThanOrEqual(9);
      expect(results.slice(1).reduce((n, r) => n + r.length, 0)).toBe(first.retry);
      expectAllDelivered(emulator, records, true);
    },
  );

  it.each(["detach", "drop-connection"] as const)(
    "%s before the accept: retryable, then exactly once",
    async (fault) => {
      const emulator = await peer();
      const records = groupedTransitions(3);
      const s = sink(emulator, { maxConcurrentBatches: 1 });
      emulator.faults.failNextSends(1, fault);
      const { results } = await drainUntilDone(s, entries(records));
      expect(tally(results[0]!).retry).toBeGreaterThan(0);
      expectAllDelivered(emulator, records, true);
    },
  );

  it.each(["detach", "server-busy"] as const)(
    "makes one attempt per send, even with maxRetries set: a %s is the drainer's to retry",
    async (fault) => {
      const emulator = await peer();
      const records = groupedTransitions(1); // one event: one AMQP batch per send
      const s = sink(emulator, { maxRetries: 3, retryDelayMs: 20, maxConcurrentBatches: 1 });
      emulator.faults.failNextSends(1, fault);
      expect(tally(await s.send(entries(records), new AbortController().signal))).toEqual({
        delivered: 0,
        retry: 2,
        rejected: 0,
      });
      expect(emulator.stats.sendsReceived).toBe(1);
      expect(emulator.events()).toEqual([]);
      // The drainer's retry is the next attempt.
      expect(tally(await s.send(entries(records), new AbortController().signal))).toEqual({
        delivered: 2,
        retry: 0,
        rejected: 0,
      });
      expect(emulator.stats.sendsReceived).toBe(2);
      expectAllDelivered(emulator, records, true);
    },
  );

  it("stored-then-dropped (in doubt): the retry duplicates with the same messageId, nothing is lost", async () => {
    const emulator = await peer();
    const records = groupedTransitions(3);
    const s = sink(emulator, { maxConcurrentBatches: 1 });
    emulator.faults.planSends(["ok", "store-then-drop"]);
    const { results } = await drainUntilDone(s, entries(records));
    expect(tally(results[0]!)).toEqual({ delivered: 2, retry: 4, rejected: 0 });
    expectAllDelivered(emulator, records, false);
    expect(emulator.events().length).toBe(records.length + 2);
  });

  it("survives links detached and connections dropped between sends", async () => {
    const emulator = await peer();
    const records = groupedTransitions(6);
    const s = sink(emulator, { maxBatchRecords: 4, maxConcurrentBatches: 1 });
    const all = entries(records);
    expect(tally(await s.send(all.slice(0, 4), new AbortController().signal)).delivered).toBe(4);
    emulator.faults.detachLinks();
    const second = await drainUntilDone(s, all.slice(4, 8));
    expect(second.rejected).toEqual([]);
    emulator.faults.dropConnections();
    await drainUntilDone(s, all.slice(8));
    expectAllDelivered(emulator, records, true);
  });

  it("slow accepts only slow the send down", async () => {
    const emulator = await peer();
    const records = groupedTransitions(2);
    const s = sink(emulator);
    emulator.faults.setAcceptDelayMs(150);
    const startedMs = Date.now();
    expect(tally(await s.send(entries(records), new AbortController().signal)).delivered).toBe(4);
    expect(Date.now() - startedMs).toBeGreaterThanOrEqual(140);
    expectAllDelivered(emulator, records, true);
  });

  it("quota exceeded on a batch: finds and dead-letters the refused record, sends the rest", async () => {
    const emulator = await peer();
    const records = [
      transition("EV-Q", "Scheduled", 0),
      transition("EV-Q", "Started", 1),
      transition("EV-Q", "Completed", 2),
    ];
    const s = sink(emulator);
    emulator.faults.planSends(["quota-exceeded", "ok", "quota-exceeded", "ok"]);
    const result = await s.send(entries(records), new AbortController().signal);
    expect(result).toEqual([
      { kind: "delivered" },
      { kind: "rejected", reason: expect.stringContaining("QuotaExceededError") },
      { kind: "delivered" },
    ]);
    expect(emulator.events().map((e) => e.messageId)).toEqual([records[0]!.RecordId, records[2]!.RecordId]);
  });

  it("a wrong key is a retryable authorization failure whose reason carries no secret", async () => {
    const emulator = await peer();
    const wrong = emulator.connectionString.replace(/SharedAccessKey=[^;]+/, "SharedAccessKey=not-the-key-s3cr3t");
    const s = sinkFor(wrong, {});
    cleanups.push(() => s.close());
    const result = await s.send(entries(groupedTransitions(1)), new AbortController().signal);
    expect(result).toMatchObject([
      { kind: "retry", reason: expect.stringContaining("not authorized") },
      { kind: "retry" },
    ]);
    expect(JSON.stringify(result)).not.toContain("s3cr3t");
    expect(emulator.events()).toEqual([]);
  });

  it("never throws: a closed sink and an aborted signal are retryable results", async () => {
    const emulator = await peer();
    const s = sink(emulator);
    const aborted = new AbortController();
    aborted.abort(new Error("shutting down"));
    expect(tally(await s.send(entries(groupedTransitions(1)), aborted.signal))).toEqual({
      delivered: 0,
      retry: 2,
      rejected: 0,
    });
    await s.close();
    expect(await s.send(entries(groupedTransitions(1)), new AbortController().signal)).toMatchObject([
      { kind: "retry", reason: "eventhubs sink is closed" },
      { kind: "retry" },
    ]);
  });
});
