// Reading batches alone, against a real outbox on a fake clock: what is read when (idle with or without a pending
// record, a linger and what ends it, a full batch pipelined past the records still in flight up to the sink's depth,
// the backlog's tail and a stop emptying the pipeline, a pipelined retry turned into one backoff).
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BatchReader, type NextBatch } from "../../src/agent/delivery/batch-reader.js";
import type { OutboxEntry } from "../../src/agent/delivery/outbox-entry.js";
import { openOutbox, type OpenOutbox } from "../helpers/outbox.js";
import { transitionRecord } from "../helpers/records.js";
import { FakeClock, flushAsync } from "../helpers/fake-clock.js";

let outbox: OpenOutbox;
let clock: FakeClock;
let waited: string[];
beforeEach(() => {
  outbox = openOutbox({ dataDir: mkdtempSync(join(tmpdir(), "sef-batches-")) });
  outbox.registerSinks(["s"]);
  clock = new FakeClock(1_000_000);
  waited = [];
});
afterEach(() => outbox.close());

function reader(sink: { maxBatchRecords?: number; lingerMs?: number; maxConcurrentSends?: number } = {}) {
  return new BatchReader({
    sink: { name: "s", maxBatchRecords: 2, lingerMs: 0, ...sink },
    outbox,
    clock,
    waits: {
      forRecords: async (ms) => void waited.push(`records ${ms}`),
      forUrgent: async (ms) => {
        waited.push(`urgent ${ms}`);
        add(3); // a record that came during the linger
      },
      idle: () => void waited.push("idle"),
    },
  });
}

function add(...ids: number[]) {
  outbox.append(
    ids.map((i) => transitionRecord({ RecordId: `r${i}`, EventId: `E${i}` })),
    clock.now(),
  );
}

/** The batch a step carries (a step without one fails the test). */
function batchOf(next: NextBatch): readonly OutboxEntry[] {
  if (!("batch" in next)) throw new Error(`no batch: ${next.kind}`);
  return next.batch;
}

const ids = (next: NextBatch) => ("batch" in next ? next.batch.map((e) => e.record.RecordId) : []);

describe("BatchReader", () => {
  it("with nothing due waits for records (idle when nothing is pending, else until the next attempt); stops when stopping", async () => {
    const batches = reader();
    expect(await batches.next(false)).toEqual({ kind: "again" });
    expect(waited).toEqual(["idle", "records undefined"]);
    add(1);
    outbox.applyOutcomes(
      "s",
      [{ seq: 1, kind: "retry", reason: "down", nextAttemptMs: clock.monotonicMs() + 700 }],
      clock.now(),
    );
    waited = [];
    expect(await batches.next(false)).toEqual({ kind: "again" });
    expect(waited).toEqual(["records 700"]);
    expect(await batches.next(true)).toEqual({ kind: "stop" });
  });

  it("sends a batch that is not full at once without a linger, or with an urgent record; lingers otherwise", async () => {
    add(1);
    expect(await reader().next(false)).toMatchObject({ kind: "send" });
    expect(waited).toEqual([]);
    const lingering = await reader({ lingerMs: 250 }).next(false);
    expect(waited).toEqual(["urgent 250"]);
    expect([lingering.kind, ids(lingering)]).toEqual(["send", ["r1", "r3"]]); // read again after the linger
    waited = [];
    outbox.append([transitionRecord({ RecordId: "u", EventId: "E9", EventStatus: "Started" })], clock.now());
    expect(ids(await reader({ maxBatchRecords: 5, lingerMs: 250 }).next(false))).toEqual(["r1", "r3", "u"]);
    expect(waited).toEqual([]);
  });

  it("stopping, sends what is due at once: a full batch unpipelined, one that is not full without a linger", async () => {
    add(1, 2);
    expect(ids(await reader({ lingerMs: 250 }).next(true))).toEqual(["r1", "r2"]);
    expect(ids(await reader({ maxBatchRecords: 5, lingerMs: 250 }).next(true))).toEqual(["r1", "r2"]);
    expect(waited).toEqual([]);
  });

  it("a linger that ends with nothing left reads again", async () => {
    add(1);
    const batches = new BatchReader({
      sink: { name: "s", maxBatchRecords: 2, lingerMs: 100 },
      outbox,
      clock,
      waits: {
        forRecords: async () => undefined,
        forUrgent: async () => void outbox.applyOutcomes("s", [{ seq: 1, kind: "delivered" }], clock.now()),
        idle: () => undefined,
      },
    });
    expect(await batches.next(false)).toEqual({ kind: "again" });
  });

  it("pipelines full batches past the records in flight up to the sink's depth; a stop sends them one at a time", async () => {
    add(1, 2, 3, 4, 5, 6, 7);
    const batches = reader({ maxConcurrentSends: 2 });
    expect(await batches.next(true)).toMatchObject({ kind: "send" }); // stopping: no pipelining
    const answers: Array<(retryAfterMs?: number) => void> = [];
    const send = () => new Promise<number | undefined>((resolve) => answers.push(resolve));
    const first = await batches.next(false);
    expect([first.kind, ids(first)]).toEqual(["pipeline", ["r1", "r2"]]);
    await batches.pipeline(batchOf(first), send); // room for one more: returns at once
    const second = await batches.next(false);
    expect(ids(second)).toEqual(["r3", "r4"]); // read past the records in flight
    let room = false;
    const full = batches.pipeline(batchOf(second), send).then(() => (room = true));
    await flushAsync();
    expect(room).toBe(false); // at the depth: waits for one answer
    answers[0]!();
    await full;
    expect(ids(await batches.next(false))).toEqual(["r5", "r6"]);
    let settled = false;
    const stopping = batches.next(true).then((next) => ((settled = true), next)); // a stop empties the pipeline first
    await flushAsync();
    expect(settled).toBe(false);
    answers[1]!();
    expect(await stopping).toEqual({ kind: "again" });
  });

  it("empties the pipeline at the backlog's tail; a pipelined retry becomes one backoff, the longest asked", async () => {
    add(1, 2, 3, 4, 5);
    const batches = reader({ maxConcurrentSends: 3 });
    const answers: Array<(retryAfterMs?: number) => void> = [];
    const send = () => new Promise<number | undefined>((resolve) => answers.push(resolve));
    for (let i = 0; i < 2; i++) await batches.pipeline(batchOf(await batches.next(false)), send);
    const tail = batches.next(false);
    answers[0]!(300);
    answers[1]!(900);
    expect(await tail).toEqual({ kind: "again" }); // r5 alone: not sent while the pipeline was full
    expect(await batches.next(false)).toEqual({ kind: "backoff", retryAfterMs: 900 });
    expect(ids(await batches.next(false))).toEqual(["r1", "r2"]); // nothing was settled: read from the start
  });
});
