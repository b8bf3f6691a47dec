// The shared drainer with a fake clock and a scripted sink: per-record outcomes land in the ledger, retries follow the
// shared policy and server hints, rejected records are dead-lettered with their reason, linger and urgency.
import { describe, expect, it, beforeEach, afterEach, vi } from "vitest";
import { mkdtempSync, readFileSync, existsSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openOutbox, type OpenOutbox } from "../helpers/outbox.js";
import { Drainer } from "../../src/agent/delivery/drainer.js";
import { DeadLetterFile } from "../../src/agent/delivery/dead-letter.js";
import { AgentMetrics } from "../../src/agent/observability/metrics.js";
import { silentLogger } from "../../src/agent/observability/logger.js";
import { allOutcomes, delivered, rejected, retry, type OutboxEntry, type SendOutcomes, type Sink } from "../../src/agent/sinks/sink.js";
import type { TransitionRecord } from "../../src/contract/record.js";
import { unknownVmIdentity } from "../../src/contract/record.js";
import { FakeClock, flushAsync } from "../helpers/fake-clock.js";

const pending = (sink = "scripted") => store.depth(sink).records;

const transition = (i: number, over: Partial<TransitionRecord> = {}): TransitionRecord => ({
  RecordId: `r${i}`,
  RecordType: "Transition",
  TimeGenerated: new Date(0).toISOString(),
  ObservedAt: new Date(0).toISOString(),
  EventId: `E${i}`,
  EventStatus: "Scheduled",
  PreviousStatus: "",
  EventType: "Freeze",
  ResourceType: "VirtualMachine",
  Resources: [],
  NotBefore: null,
  Description: "",
  EventSource: "",
  DurationInSeconds: -1,
  DocumentIncarnation: 1,
  AffectsThisVm: true,
  ObservationGap: false,
  ...unknownVmIdentity,
  AgentId: "00000000-0000-4000-8000-000000000001",
  AgentVersion: "t",
  ...over,
});

/** A sink that answers from a script and remembers what it was sent. */
class ScriptedSink implements Sink {
  readonly name = "scripted";
  readonly sent: string[][] = [];
  readonly sendTimes: number[] = [];
  constructor(
    private readonly clock: FakeClock,
    private readonly script: Array<(batch: readonly OutboxEntry[]) => SendOutcomes>,
    readonly maxBatchRecords = 100,
    readonly lingerMs = 0,
  ) {}
  async send(batch: readonly OutboxEntry[]): Promise<SendOutcomes> {
    this.sent.push(batch.map((e) => e.record.RecordId));
    this.sendTimes.push(this.clock.now());
    const step = this.script.shift();
    return step ? step(batch) : allOutcomes(batch, delivered);
  }
  async close(): Promise<void> {}
}

let dir: string;
let store: OpenOutbox;
let clock: FakeClock;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "sef-drain-"));
  store = openOutbox({ dataDir: dir, maxOutboxBytes: 1 << 30 });
  clock = new FakeClock(1_000_000);
});
afterEach(() => store.close());

function drainerFor(sink: Sink, metrics = new AgentMetrics(), random = () => 1 - 1e-9) {
  store.registerSinks([sink.name]);
  const drainer = new Drainer({
    sink,
    outbox: store,
    clock,
    retryPolicy: { initialDelayMs: 1000, maxDelayMs: 30_000, multiplier: 2 },
    deadLetters: new DeadLetterFile(join(dir, "dead-letter")),
    logger: silentLogger(),
    metrics,
    random,
  });
  drainer.start();
  return drainer;
}

function add(...records: TransitionRecord[]) {
  return store.append(records, clock.now());
}

describe("Drainer", () => {
  it("sends new records and settles them in the ledger", async () => {
    const sink = new ScriptedSink(clock, []);
    const drainer = drainerFor(sink);
    add(transition(1), transition(2));
    drainer.notify();
    await flushAsync();
    expect(sink.sent).toEqual([["r1", "r2"]]);
    expect(pending()).toBe(0);
    expect(store.status()[0]).toMatchObject({ sink: "scripted", pending: 0, delivered: 2, deadLettered: 0, lastDeliveryMs: 1_000_000 });
    expect(store.readAfter(0, 10)).toEqual([]); // no sink needs them any more
    await drainer.stop(clock.monotonicMs());
  });

  it("retries with exponential backoff, keeping the records pending until delivered", async () => {
    const fail = (batch: readonly OutboxEntry[]) => allOutcomes(batch, retry("down"));
    const sink = new ScriptedSink(clock, [fail, fail, fail]);
    const drainer = drainerFor(sink);
    add(transition(1));
    drainer.notify();
    await flushAsync();
    expect(pending()).toBe(1);
    await clock.advance(1000);
    await clock.advance(2000);
    await clock.advance(4000);
    expect(sink.sendTimes.map((t) => t - 1_000_000)).toEqual([0, 1000, 3000, 7000]);
    expect(pending()).toBe(0);
    expect(drainer.status().consecutiveFailures).toBe(0);
    await drainer.stop(clock.monotonicMs());
  });

  it("lets a server's retry-after hint win and counts throttled time", async () => {
    const metrics = new AgentMetrics();
    const sink = new ScriptedSink(clock, [(batch) => allOutcomes(batch, retry("429", 7000))]);
    const drainer = drainerFor(sink, metrics, () => 0);
    add(transition(1));
    drainer.notify();
    await flushAsync();
    await clock.advance(6999);
    expect(sink.sent.length).toBe(1);
    await clock.advance(1);
    expect(sink.sent.length).toBe(2);
    expect(await metrics.render()).toMatch(/^sef_sink_throttled_seconds_total\{sink="scripted"\} 7$/m);
    await drainer.stop(clock.monotonicMs());
  });

  it("spreads a retry-after hint by up to half again, never retrying before it", async () => {
    const sink = new ScriptedSink(clock, [(batch) => allOutcomes(batch, retry("429", 7000))]);
    const drainer = drainerFor(sink, new AgentMetrics(), () => 1 - 1e-9);
    add(transition(1));
    drainer.notify();
    await flushAsync();
    await clock.advance(10_499);
    expect(sink.sent.length).toBe(1);
    await clock.advance(1);
    expect(sink.sent.length).toBe(2);
    await drainer.stop(clock.monotonicMs());
  });

  it("never sends a delivered record again: only the records to retry go out next time, whatever their place", async () => {
    const sink = new ScriptedSink(clock, [() => [delivered, retry("busy"), delivered, retry("busy")]]);
    const drainer = drainerFor(sink);
    add(transition(1), transition(2), transition(3), transition(4));
    drainer.notify();
    await flushAsync();
    await clock.advance(1000);
    expect(sink.sent).toEqual([["r1", "r2", "r3", "r4"], ["r2", "r4"]]);
    expect(pending()).toBe(0);
    await drainer.stop(clock.monotonicMs());
  });

  it("keeps a record acknowledged once out of every later send, across a reopen of the store", async () => {
    const sink = new ScriptedSink(clock, [() => [retry("busy"), delivered]]);
    const drainer = drainerFor(sink);
    add(transition(1), transition(2));
    drainer.notify();
    await flushAsync();
    await drainer.stop(clock.monotonicMs());
    store.close();
    store = openOutbox({ dataDir: dir, maxOutboxBytes: 1 << 30 });
    const again = new ScriptedSink(clock, []);
    const second = drainerFor(again);
    await clock.advance(1000);
    second.notify();
    await flushAsync();
    expect(again.sent).toEqual([["r1"]]);
    await second.stop(clock.monotonicMs());
  });

  it("dead-letters rejected records with the reason and moves on", async () => {
    const sink = new ScriptedSink(clock, [() => [delivered, rejected("too large: 2 MB"), delivered]]);
    const drainer = drainerFor(sink);
    add(transition(1), transition(2), transition(3));
    drainer.notify();
    await vi.waitFor(() => expect(pending()).toBe(0));
    const lines = readFileSync(join(dir, "dead-letter", "scripted.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ sink: "scripted", reason: "too large: 2 MB", record: { RecordId: "r2" } });
    expect(store.deadLetters("scripted")).toMatchObject([{ seq: 2, recordId: "r2", reason: "too large: 2 MB" }]);
    expect(store.status()[0]).toMatchObject({ pending: 0, deadLettered: 1, delivered: 2 });
    await drainer.stop(clock.monotonicMs());
  });

  it("keeps rejected records pending and retries when the dead-letter file cannot be written", async () => {
    writeFileSync(join(dir, "dead-letter"), "a file where the directory should be");
    const sink = new ScriptedSink(clock, [(b) => allOutcomes(b, rejected("400")), (b) => allOutcomes(b, rejected("400"))]);
    const drainer = drainerFor(sink);
    add(transition(1));
    drainer.notify();
    await vi.waitFor(() => expect(drainer.status().lastError).toMatch(/could not write the dead-letter file/));
    expect(pending()).toBe(1);
    rmSync(join(dir, "dead-letter"));
    await clock.advance(1000);
    await vi.waitFor(() => expect(pending()).toBe(0));
    expect(readFileSync(join(dir, "dead-letter", "scripted.jsonl"), "utf8")).toContain('"reason":"400"');
    await drainer.stop(clock.monotonicMs());
  });

  it("treats a sink that throws, or answers with the wrong number of outcomes, as retry, never as delivered", async () => {
    const sink = new ScriptedSink(clock, [() => { throw new Error("boom"); }, () => [delivered]]);
    const drainer = drainerFor(sink);
    add(transition(1), transition(2));
    drainer.notify();
    await flushAsync();
    expect(pending()).toBe(2);
    expect(drainer.status().lastError).toMatch(/boom/);
    await clock.advance(1000);
    expect(pending()).toBe(2);
    expect(drainer.status().lastError).toMatch(/1 outcomes for 2 records/);
    await clock.advance(2000);
    expect(pending()).toBe(0);
    await drainer.stop(clock.monotonicMs());
  });

  it("lingers for a fuller batch, but not for urgent records", async () => {
    const sink = new ScriptedSink(clock, [], 100, 100);
    const drainer = drainerFor(sink);
    add(transition(1));
    drainer.notify();
    await flushAsync();
    expect(sink.sent).toEqual([]);
    add(transition(2));
    drainer.notify(false);
    await clock.advance(100);
    expect(sink.sent).toEqual([["r1", "r2"]]);
    add(transition(3, { EventType: "Preempt" }));
    drainer.notify(true);
    await flushAsync();
    expect(sink.sent[1]).toEqual(["r3"]);
    expect(sink.sendTimes[1]).toBe(sink.sendTimes[0]);
    await drainer.stop(clock.monotonicMs());
  });

  it("pipelines full batches when the sink allows concurrent sends: never one record in two sends at once, a retry empties the pipeline", async () => {
    /** Answers only when released, so several sends can be in flight. */
    class GatedSink implements Sink {
      readonly name = "gated";
      readonly maxBatchRecords = 2;
      readonly lingerMs = 0;
      readonly maxConcurrentSends = 2;
      readonly inFlight: string[][] = [];
      readonly sent: string[][] = [];
      /** Records handed over while another send still held them (checked by the test: a throw here would be a retry). */
      readonly overlaps: string[] = [];
      private readonly gates: Array<(o: SendOutcomes) => void> = [];
      async send(batch: readonly OutboxEntry[]): Promise<SendOutcomes> {
        const ids = batch.map((e) => e.record.RecordId);
        for (const other of this.inFlight) this.overlaps.push(...other.filter((id) => ids.includes(id)));
        this.inFlight.push(ids);
        this.sent.push(ids);
        const outcomes = await new Promise<SendOutcomes>((resolve) => this.gates.push(resolve));
        this.inFlight.splice(this.inFlight.indexOf(ids), 1);
        return outcomes;
      }
      release(outcome: (n: number) => SendOutcomes): void {
        this.gates.shift()!(outcome(2));
      }
      async close(): Promise<void> {}
    }
    const sink = new GatedSink();
    const drainer = drainerFor(sink);
    add(...[1, 2, 3, 4, 5, 6, 7].map((i) => transition(i)));
    drainer.notify();
    await flushAsync();
    expect(sink.sent).toEqual([["r1", "r2"], ["r3", "r4"]]); // two full batches in flight, the third waits
    sink.release((n) => Array.from({ length: n }, () => delivered));
    await flushAsync();
    expect(sink.sent).toEqual([["r1", "r2"], ["r3", "r4"], ["r5", "r6"]]);
    sink.release((n) => Array.from({ length: n }, () => retry("busy", 5000)));
    await flushAsync();
    // A retry: nothing new starts until the pipeline is empty and the backoff is over.
    expect(sink.sent).toHaveLength(3);
    sink.release((n) => Array.from({ length: n }, () => delivered));
    await flushAsync();
    expect(sink.sent).toHaveLength(3);
    expect(store.due("gated", 10, clock.monotonicMs() + 1e9).map((e) => e.record.RecordId)).toEqual(["r3", "r4", "r7"]);
    await clock.advance(7499); // the 5 s hint, spread by the jitter (random ≈ 1 here: 1.5 × the hint)
    await flushAsync();
    expect(sink.sent).toHaveLength(3);
    await clock.advance(1);
    await flushAsync();
    expect(sink.sent.slice(3)).toEqual([["r3", "r4"]]);
    sink.release((n) => Array.from({ length: n }, () => delivered));
    await flushAsync();
    expect(sink.sent.slice(4)).toEqual([["r7"]]); // the tail goes out one send at a time
    sink.release(() => [delivered]);
    await flushAsync();
    expect(store.status()[0]).toMatchObject({ sink: "gated", pending: 0, delivered: 7 });
    expect(sink.overlaps, "records in two sends at once").toEqual([]);
    const stopping = drainer.stop(clock.monotonicMs());
    await flushAsync();
    await stopping;
  });

  it("stops during a backoff without waiting for it, leaving records in the outbox", async () => {
    const sink = new ScriptedSink(clock, [(b) => allOutcomes(b, retry("down"))]);
    const drainer = drainerFor(sink);
    add(transition(1));
    drainer.notify();
    await flushAsync();
    await drainer.stop(clock.now() + 5000);
    expect(sink.sent.length).toBe(1);
    expect(store.depth("scripted").records).toBe(1);
    expect(existsSync(join(dir, "dead-letter"))).toBe(false);
  });
});
