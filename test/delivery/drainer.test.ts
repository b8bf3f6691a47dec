// The shared drainer with a fake clock and a scripted sink: per-record outcomes land in the ledger, retries follow the
// shared policy and server hints, rejected records are dead-lettered with their reason, linger and urgency.
import { describe, expect, it, beforeEach, afterEach, vi } from "vitest";
import { Writable } from "node:stream";
import type { Logger } from "pino";
import { mkdtempSync, readFileSync, existsSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openOutbox, type OpenOutbox } from "../helpers/outbox.js";
import { Drainer, sinkCloseTimeoutMs } from "../../src/agent/delivery/drainer.js";
import { DeadLetterFile } from "../../src/agent/delivery/dead-letter.js";
import { AgentMetrics } from "../../src/agent/observability/metrics.js";
import { createLogger, silentLogger } from "../../src/agent/observability/logger.js";
import { allOutcomes, delivered, rejected, retry, type SendOutcomes, type Sink } from "../../src/agent/sinks/sink.js";
import type { OutboxEntry } from "../../src/agent/delivery/outbox-entry.js";
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

function drainerFor(
  sink: Sink,
  metrics = new AgentMetrics(),
  random = () => 1 - 1e-9,
  logger: Logger = silentLogger(),
  outbox: typeof store = store,
) {
  store.registerSinks([sink.name]);
  const drainer = new Drainer({
    sink,
    outbox,
    clock,
    retryPolicy: { initialDelayMs: 1000, maxDelayMs: 30_000, multiplier: 2 },
    deadLetters: new DeadLetterFile(join(dir, "dead-letter")),
    logger,
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
    expect(store.status()[0]).toMatchObject({
      sink: "scripted",
      pending: 0,
      delivered: 2,
      deadLettered: 0,
      lastDeliveryMs: 1_000_000,
    });
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
    expect(sink.sent).toEqual([
      ["r1", "r2", "r3", "r4"],
      ["r2", "r4"],
    ]);
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
    const lines = readFileSync(join(dir, "dead-letter", "scripted.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ sink: "scripted", reason: "too large: 2 MB", record: { RecordId: "r2" } });
    expect(store.deadLetters("scripted")).toMatchObject([{ seq: 2, recordId: "r2", reason: "too large: 2 MB" }]);
    expect(store.status()[0]).toMatchObject({ pending: 0, deadLettered: 1, delivered: 2 });
    await drainer.stop(clock.monotonicMs());
  });

  it("keeps rejected records pending and retries when the dead-letter file cannot be written", async () => {
    writeFileSync(join(dir, "dead-letter"), "a file where the directory should be");
    const sink = new ScriptedSink(clock, [
      (b) => allOutcomes(b, rejected("400")),
      (b) => allOutcomes(b, rejected("400")),
    ]);
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
    const sink = new ScriptedSink(clock, [
      () => {
        throw new Error("boom");
      },
      () => [delivered],
    ]);
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
    expect(sink.sent).toEqual([
      ["r1", "r2"],
      ["r3", "r4"],
    ]); // two full batches in flight, the third waits
    sink.release((n) => Array.from({ length: n }, () => delivered));
    await flushAsync();
    expect(sink.sent).toEqual([
      ["r1", "r2"],
      ["r3", "r4"],
      ["r5", "r6"],
    ]);
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

/** A logger whose JSON lines the test reads (every level). */
function capturedLogger(): { logger: Logger; lines: () => Array<Record<string, unknown>> } {
  const chunks: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk.toString("utf8"));
      done();
    },
  });
  return {
    logger: createLogger({ level: "debug", destination }),
    lines: () =>
      chunks
        .join("")
        .split("\n")
        .filter((l) => l !== "")
        .map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

/** A sink whose sends end only when the drainer aborts them (shutdown), or never (`deaf`); it notes what happened, in order. */
class AbortAwareSink implements Sink {
  readonly name = "aborting";
  readonly lingerMs = 0;
  readonly events: string[] = [];
  constructor(
    private readonly behaviour: { deaf?: boolean; close?: "hang" | "fail" } = {},
    readonly maxBatchRecords = 100,
    readonly maxConcurrentSends = 1,
  ) {}
  send(batch: readonly OutboxEntry[], signal?: AbortSignal): Promise<SendOutcomes> {
    const ids = batch.map((e) => e.record.RecordId).join(",");
    this.events.push(`send ${ids}`);
    if (this.behaviour.deaf) return new Promise<SendOutcomes>(() => undefined);
    return new Promise<SendOutcomes>((resolve) =>
      signal!.addEventListener("abort", () => {
        this.events.push(`aborted ${ids}: ${(signal!.reason as Error).message}`);
        resolve(allOutcomes(batch, retry("aborted")));
      }),
    );
  }
  async close(): Promise<void> {
    this.events.push("close");
    if (this.behaviour.close === "hang") await new Promise(() => undefined);
    if (this.behaviour.close === "fail") throw new Error("close refused");
  }
}

describe("Drainer: what operators see, and the edges of its waits", () => {
  it("warns at the first failed attempt and every tenth (debug in between), says when the sink recovered, and keeps the failing gauge and retry counter per sink", async () => {
    const log = capturedLogger();
    const metrics = new AgentMetrics();
    const fail = (batch: readonly OutboxEntry[]) => allOutcomes(batch, retry("down"));
    const sink = new ScriptedSink(
      clock,
      Array.from({ length: 11 }, () => fail),
    );
    const drainer = drainerFor(sink, metrics, undefined, log.logger);
    expect(await metrics.render()).toMatch(/^sef_sink_failing\{sink="scripted"\} 0$/m);
    add(transition(1));
    drainer.notify();
    await flushAsync();
    const firstFailureMs = clock.monotonicMs();
    expect(await metrics.render()).toMatch(/^sef_sink_failing\{sink="scripted"\} 1$/m);
    await clock.advance(1000);
    expect(drainer.status()).toMatchObject({
      consecutiveFailures: 2,
      failingSinceMs: firstFailureMs,
      lastError: "down",
    });
    for (let i = 0; i < 20 && sink.sent.length < 12; i++) await clock.advance(30_000);
    expect(sink.sent).toHaveLength(12);
    const failed = log.lines().filter((l) => l.msg === "send failed, will retry");
    expect(failed.map((l) => [l.attempt, l.level])).toEqual(
      Array.from({ length: 11 }, (_, i) => [i + 1, i === 0 || i === 9 ? "warn" : "debug"]),
    );
    expect(failed[0]).toMatchObject({ sink: "scripted", reason: "down", delayMs: 1000 });
    expect(log.lines().filter((l) => l.msg === "sink recovered")).toEqual([
      expect.objectContaining({ level: "info", sink: "scripted", afterAttempts: 11 }),
    ]);
    const text = await metrics.render();
    expect(text).toMatch(/^sef_sink_retries_total\{sink="scripted"\} 11$/m);
    expect(text).not.toMatch(/^sef_sink_throttled_seconds_total\{sink="scripted"\}/m); // no hint, no throttling
    expect(text).toMatch(/^sef_sink_failing\{sink="scripted"\} 0$/m);
    expect(text).toMatch(/^sef_sink_sent_total\{sink="scripted"\} 1$/m);
    expect(drainer.status()).toMatchObject({ consecutiveFailures: 0, failingSinceMs: null, lastError: null });
    await drainer.stop(clock.monotonicMs());
  });

  it("a sink that never failed is never said to have recovered; depth and oldest age are kept per sink", async () => {
    const log = capturedLogger();
    const metrics = new AgentMetrics();
    const sink = new ScriptedSink(clock, [(b) => allOutcomes(b, retry("down"))]);
    const drainer = drainerFor(sink, metrics, undefined, log.logger);
    add(transition(1));
    await clock.advance(4000); // the record waits 4 s before the drainer hears of it
    drainer.notify();
    await flushAsync();
    let text = await metrics.render();
    expect(text).toMatch(/^sef_outbox_depth\{sink="scripted"\} 1$/m);
    expect(text).toMatch(/^sef_outbox_oldest_age_seconds\{sink="scripted"\} 4$/m);
    await clock.advance(1000);
    text = await metrics.render();
    expect(text).toMatch(/^sef_outbox_depth\{sink="scripted"\} 0$/m);
    expect(log.lines().filter((l) => l.msg === "sink recovered")).toHaveLength(1);
    const quiet = capturedLogger();
    const other = new ScriptedSink(clock, []);
    Object.defineProperty(other, "name", { value: "quiet" });
    const second = drainerFor(other, new AgentMetrics(), undefined, quiet.logger);
    add(transition(2));
    second.notify();
    await flushAsync();
    expect(other.sent).toEqual([["r2"]]);
    expect(quiet.lines().filter((l) => l.msg === "sink recovered")).toEqual([]);
    await drainer.stop(clock.monotonicMs());
    await second.stop(clock.monotonicMs());
  });

  it("dead-letters with the reason (or 'rejected without a reason'), counts and logs them per sink, and counts them since the last delivery", async () => {
    const log = capturedLogger();
    const metrics = new AgentMetrics();
    const sink = new ScriptedSink(clock, [
      () => [delivered, rejected("too large")],
      () => [rejected("   ")],
      () => [delivered],
    ]);
    const drainer = drainerFor(sink, metrics, undefined, log.logger);
    add(transition(1), transition(2));
    drainer.notify();
    await vi.waitFor(() => expect(drainer.status().deadLetteredSinceDelivery).toBe(1));
    await clock.advance(5000);
    add(transition(3));
    drainer.notify();
    await vi.waitFor(() => expect(drainer.status().deadLetteredSinceDelivery).toBe(2));
    add(transition(4));
    drainer.notify();
    await vi.waitFor(() => expect(drainer.status().deadLetteredSinceDelivery).toBe(0));
    expect(store.deadLetters("scripted").map((d) => [d.recordId, d.reason])).toEqual([
      ["r2", "too large"],
      ["r3", "rejected without a reason"],
    ]);
    const lines = readFileSync(join(dir, "dead-letter", "scripted.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { reason: string });
    expect(lines.map((l) => l.reason)).toEqual(["too large", "rejected without a reason"]);
    const text = await metrics.render();
    expect(text).toMatch(/^sef_sink_dead_letters_total\{sink="scripted"\} 2$/m);
    expect(text).toMatch(/^sef_sink_sent_total\{sink="scripted"\} 2$/m);
    expect(log.lines().filter((l) => l.msg === "records dead-lettered")[0]).toMatchObject({
      level: "error",
      sink: "scripted",
      records: 1,
      reason: "too large",
      file: join(dir, "dead-letter", "scripted.jsonl"),
    });
    await drainer.stop(clock.monotonicMs());
  });

  it("schedules each retried record by its own hint, or by the send's backoff — never sooner — and says when an operator is needed", async () => {
    const sink = new ScriptedSink(clock, [
      () => [retry("429", 7000), retry("busy", undefined, true)],
      (b) => allOutcomes(b, delivered),
    ]);
    const drainer = drainerFor(sink);
    add(transition(1), transition(2));
    drainer.notify();
    await flushAsync();
    expect(drainer.status().needsOperator).toBe("busy");
    expect(store.due("scripted", 10, clock.monotonicMs())).toEqual([]);
    await clock.advance(1000);
    expect(store.due("scripted", 10, clock.monotonicMs())).toEqual([]); // the record without a hint waits for the hinted send too
    await clock.advance(9500); // 7 s × 1.5 (random ≈ 1)
    expect(sink.sent).toEqual([
      ["r1", "r2"],
      ["r1", "r2"],
    ]);
    expect(drainer.status().needsOperator).toBeNull();
    await drainer.stop(clock.monotonicMs());
  });

  it("a record whose dead-letter line could not be written waits out the backoff before its next attempt", async () => {
    writeFileSync(join(dir, "dead-letter"), "a file where the directory should be");
    const sink = new ScriptedSink(clock, [(b) => allOutcomes(b, rejected("400"))]);
    const drainer = drainerFor(sink);
    add(transition(1));
    drainer.notify();
    await vi.waitFor(() => expect(drainer.status().lastError).toMatch(/could not write the dead-letter file/));
    expect(store.due("scripted", 10, clock.monotonicMs())).toEqual([]);
    expect(store.due("scripted", 10, clock.monotonicMs() + 1000).map((e) => e.record.RecordId)).toEqual(["r1"]);
    await drainer.stop(clock.monotonicMs());
  });

  it("when the outcome cannot be recorded it keeps the records pending, says why, and warns that the depth cannot be read", async () => {
    const log = capturedLogger();
    const rename = (from: string, to: string) => store.opened.database.exec(`ALTER TABLE ${from} RENAME TO ${to}`);
    const sink = new ScriptedSink(clock, [
      (b) => {
        rename("sinks", "sinks_away"); // the store cannot be written (nor read) while the outcome is applied
        return allOutcomes(b, delivered);
      },
    ]);
    const drainer = drainerFor(sink, new AgentMetrics(), undefined, log.logger);
    add(transition(1));
    drainer.notify();
    await flushAsync();
    rename("sinks_away", "sinks");
    expect(drainer.status().lastError).toMatch(/^could not record the outcome of a send: .*sinks/);
    expect(log.lines().find((l) => l.msg === "could not read the outbox depth")).toMatchObject({
      level: "warn",
      sink: "scripted",
    });
    expect(pending()).toBe(1);
    await clock.advance(1000);
    expect(sink.sent).toEqual([["r1"], ["r1"]]);
    expect(pending()).toBe(0);
    await drainer.stop(clock.monotonicMs());
  });

  it("logs a drain loop that dies (its store unreadable) with the sink's name", async () => {
    const log = capturedLogger();
    const sink = new ScriptedSink(clock, []);
    const drainer = drainerFor(sink, new AgentMetrics(), undefined, log.logger);
    await flushAsync();
    store.opened.database.exec("ALTER TABLE deliveries RENAME TO deliveries_away");
    drainer.notify();
    await vi.waitFor(() =>
      expect(log.lines().find((l) => l.msg === "drain loop stopped unexpectedly")).toMatchObject({
        level: "error",
        sink: "scripted",
      }),
    );
    store.opened.database.exec("ALTER TABLE deliveries_away RENAME TO deliveries");
    await drainer.stop(clock.monotonicMs());
  });

  it("a failing sink backs off as a whole (records it has not tried wait too); stopping in the backoff sends nothing more", async () => {
    const sink = new ScriptedSink(clock, [(b) => allOutcomes(b, retry("down"))], 1);
    const drainer = drainerFor(sink);
    add(transition(1), transition(2));
    drainer.notify();
    await clock.advance(999);
    expect(sink.sent).toEqual([["r1"]]);
    await clock.advance(1);
    expect(sink.sent).toEqual([["r1"], ["r1"], ["r2"]]);
    const failing = new ScriptedSink(clock, [(b) => allOutcomes(b, retry("down"))], 1);
    Object.defineProperty(failing, "name", { value: "failing" });
    const second = drainerFor(failing);
    add(transition(3), transition(4));
    second.notify();
    await flushAsync();
    await second.stop(clock.monotonicMs() + 5000);
    expect(failing.sent).toEqual([["r3"]]); // a new sink starts at the head: r3 and r4 are its records
    await drainer.stop(clock.monotonicMs());
  });

  it("lingers until an urgent record comes (notify() alone is not urgent), but never for a full batch or one holding an urgent record", async () => {
    const sink = new ScriptedSink(clock, [], 3, 100);
    const drainer = drainerFor(sink);
    add(transition(1));
    drainer.notify();
    await clock.advance(50);
    add(transition(2));
    drainer.notify();
    await clock.advance(10);
    expect(sink.sent).toEqual([]);
    add(transition(3, { EventType: "Preempt" }));
    drainer.notify(true);
    await flushAsync();
    expect(sink.sent).toEqual([["r1", "r2", "r3"]]);
    expect(sink.sendTimes).toEqual([clock.now()]);
    expect(clock.pendingSleeps).toBe(0); // the linger's timer went with it
    add(transition(4), transition(5), transition(6));
    drainer.notify();
    await flushAsync();
    expect(sink.sent[1]).toEqual(["r4", "r5", "r6"]);
    add(transition(7), transition(8, { EventStatus: "Started" }));
    drainer.notify();
    await flushAsync();
    expect(sink.sent[2]).toEqual(["r7", "r8"]);
    await drainer.stop(clock.monotonicMs());
  });

  it("a backoff is not cut short by new records, urgent or not, nor by one arriving during the failed send", async () => {
    const box: { drainer?: Drainer } = {};
    const sink = new ScriptedSink(clock, [
      (b) => {
        box.drainer!.notify(); // a record committed while the send was out
        return allOutcomes(b, retry("down"));
      },
    ]);
    const drainer = drainerFor(sink);
    box.drainer = drainer;
    add(transition(1));
    drainer.notify();
    await flushAsync();
    add(transition(2, { EventType: "Preempt" }));
    drainer.notify(true);
    await clock.advance(999);
    expect(sink.sent).toEqual([["r1"]]);
    await clock.advance(1);
    expect(sink.sent).toEqual([["r1"], ["r1", "r2"]]);
    await drainer.stop(clock.monotonicMs());
  });

  it("waits for a record's own later attempt when the send's backoff ended first, and an idle sink is not a stalled one", async () => {
    const draws = [0, 0.99];
    const sink = new ScriptedSink(clock, [() => [retry("429", 4000)]]);
    let reads = 0;
    const counting: typeof store = Object.assign(Object.create(store) as typeof store, {
      due: (...args: Parameters<typeof store.due>) => {
        reads += 1;
        return store.due(...args);
      },
    });
    const drainer = drainerFor(sink, new AgentMetrics(), () => draws.shift() ?? 0.5, silentLogger(), counting);
    const startedMs = clock.monotonicMs();
    add(transition(1));
    drainer.notify();
    await clock.advance(4500); // the send's wait (4 s) is over; the record's own next attempt is 4 s × (1 + 0.5 × 0.99)
    drainer.notify(); // a wake with nothing new
    await flushAsync();
    expect(sink.sent).toHaveLength(1);
    expect(drainer.status().lastProgressMs).toBe(startedMs); // a record waits: no progress
    const readsBefore = reads;
    await clock.advance(1479);
    expect(sink.sent).toHaveLength(1);
    expect(
      reads - readsBefore,
      "reads of the outbox while nothing is due (it sleeps until the attempt, it does not poll)",
    ).toBeLessThanOrEqual(2);
    await clock.advance(1);
    expect(sink.sendTimes.map((t) => t - sink.sendTimes[0]!)).toEqual([0, 5980]);
    // Nothing waits now: time passing while idle is not a stall.
    await clock.advance(60_000);
    drainer.notify();
    await flushAsync();
    expect(drainer.status().lastProgressMs).toBe(clock.monotonicMs());
    await drainer.stop(clock.monotonicMs());
  });

  it("a record dead-lettered without a delivery is progress of a kind: the sink was not stuck (nothing waits after it)", async () => {
    const sink = new ScriptedSink(clock, [() => [rejected("bad")]]);
    const drainer = drainerFor(sink);
    await clock.advance(5000);
    add(transition(1));
    drainer.notify();
    await vi.waitFor(() => expect(drainer.status().deadLetteredSinceDelivery).toBe(1));
    await vi.waitFor(() => expect(drainer.status().lastProgressMs).toBe(clock.monotonicMs()));
    const failing = new ScriptedSink(clock, [() => [retry("down")]]);
    Object.defineProperty(failing, "name", { value: "failing" });
    const createdMs = clock.monotonicMs();
    const second = drainerFor(failing);
    await clock.advance(5000);
    add(transition(2));
    second.notify();
    await flushAsync();
    expect(second.status().lastProgressMs).toBe(createdMs);
    await drainer.stop(clock.monotonicMs());
    await second.stop(clock.monotonicMs());
  });

  it("a sink that pipelines still lingers over a batch that is not full", async () => {
    const sink = new ScriptedSink(clock, [], 3, 100);
    Object.defineProperty(sink, "maxConcurrentSends", { value: 2 });
    const drainer = drainerFor(sink);
    add(transition(1));
    drainer.notify();
    await clock.advance(99);
    expect(sink.sent).toEqual([]);
    await clock.advance(1);
    expect(sink.sent).toEqual([["r1"]]);
    await drainer.stop(clock.monotonicMs());
  });

  it("stopping while pipelined sends wait out a retry sends nothing more", async () => {
    const sink = new AbortAwareSink({}, 2, 2);
    const answers: Array<(o: SendOutcomes) => void> = [];
    sink.send = (batch: readonly OutboxEntry[]) => {
      sink.events.push(`send ${batch.map((e) => e.record.RecordId).join(",")}`);
      return new Promise<SendOutcomes>((resolve) => answers.push(resolve));
    };
    const drainer = drainerFor(sink);
    add(...[1, 2, 3, 4, 5, 6].map((i) => transition(i)));
    drainer.notify();
    await flushAsync();
    expect(sink.events).toEqual(["send r1,r2", "send r3,r4"]);
    answers.shift()!([retry("busy", 5000), retry("busy", 5000)]);
    answers.shift()!([delivered, delivered]);
    await flushAsync();
    await drainer.stop(clock.monotonicMs() + 60_000);
    expect(sink.events).toEqual(["send r1,r2", "send r3,r4", "close"]);
  });

  it("records taken from the outbox during a linger (evicted) are not sent as an empty batch", async () => {
    store.close();
    store = openOutbox({ dataDir: dir, maxOutboxBytes: 1 });
    const sink = new ScriptedSink(clock, [], 100, 100);
    const drainer = drainerFor(sink);
    add(transition(1));
    drainer.notify();
    await flushAsync();
    store.evictOverCap(new DeadLetterFile(join(dir, "dead-letter")), clock.now());
    expect(pending()).toBe(0);
    await clock.advance(100);
    expect(sink.sent).toEqual([]);
    await drainer.stop(clock.monotonicMs());
  });
});

describe("Drainer.stop", () => {
  it("with the deadline ahead: sends what is due, then closes the sink, without a warning", async () => {
    const log = capturedLogger();
    const sink = new ScriptedSink(clock, []);
    const closed: string[] = [];
    sink.close = async () => void closed.push(`closed after ${sink.sent.length} sends`);
    const drainer = drainerFor(sink, new AgentMetrics(), undefined, log.logger);
    await flushAsync();
    add(transition(1), transition(2)); // not notified: found by the flush
    await drainer.stop(clock.monotonicMs() + 5000);
    expect(sink.sent).toEqual([["r1", "r2"]]);
    expect(closed).toEqual(["closed after 1 sends"]);
    expect(log.lines().filter((l) => l.level === "warn")).toEqual([]);
  });

  it("with the deadline ahead: lets a send in progress finish, unaborted", async () => {
    const sink = new AbortAwareSink();
    sink.send = (batch: readonly OutboxEntry[], signal?: AbortSignal) =>
      new Promise<SendOutcomes>((resolve) => {
        const timer = setTimeout(() => resolve(allOutcomes(batch, delivered)), 50);
        signal!.addEventListener("abort", () => {
          clearTimeout(timer);
          sink.events.push("aborted");
          resolve(allOutcomes(batch, retry("aborted")));
        });
      });
    const drainer = drainerFor(sink);
    add(transition(1));
    drainer.notify();
    await flushAsync();
    await drainer.stop(clock.monotonicMs() + 5000);
    expect(sink.events).toEqual(["close"]);
    expect(pending("aborting")).toBe(0);
  });

  it("leaves no timer behind: a drainer stopped well before its deadline holds no process open and aborts nothing later", async () => {
    const sink = new AbortAwareSink();
    const drainer = drainerFor(sink);
    await flushAsync();
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;
    const before = timers();
    await drainer.stop(clock.monotonicMs() + 600_000);
    expect(sink.events).toEqual(["close"]);
    expect(timers()).toBe(before);
  });

  it("at its deadline: sends nothing more", async () => {
    const sink = new ScriptedSink(clock, []);
    const drainer = drainerFor(sink);
    await flushAsync();
    add(transition(1));
    await drainer.stop(clock.monotonicMs());
    expect(sink.sent).toEqual([]);
    expect(pending()).toBe(1);
  });

  it("aborts a send still out at the deadline ('shutdown deadline reached') and returns once it has ended", async () => {
    const log = capturedLogger();
    const sink = new AbortAwareSink();
    const drainer = drainerFor(sink, new AgentMetrics(), undefined, log.logger);
    add(transition(1));
    drainer.notify();
    await flushAsync();
    // Ordered, not timed: a timer of the sink's close allowance, set before the stop, must not fire first (a stop that
    // waited out its allowance past the deadline instead of the aborted send would lose the race on any load).
    let allowanceTimer: NodeJS.Timeout | undefined;
    const allowanceOver = new Promise<string>((resolve) => {
      allowanceTimer = setTimeout(() => resolve("the close allowance ran out first"), sinkCloseTimeoutMs);
    });
    const first = await Promise.race([drainer.stop(clock.monotonicMs() + 50).then(() => "stopped"), allowanceOver]);
    clearTimeout(allowanceTimer);
    expect(first).toBe("stopped");
    expect(sink.events).toEqual(["send r1", "aborted r1: shutdown deadline reached", "close"]);
    expect(
      log
        .lines()
        .filter((l) => l.level === "warn")
        .map((l) => l.msg),
    ).toEqual(["send failed, will retry"]);
    expect(pending("aborting")).toBe(1);
  });

  it("waits for pipelined sends to end before closing the sink", async () => {
    const sink = new AbortAwareSink({}, 2, 2);
    const drainer = drainerFor(sink);
    add(transition(1), transition(2), transition(3), transition(4));
    drainer.notify();
    await flushAsync();
    expect(sink.events).toEqual(["send r1,r2", "send r3,r4"]);
    await drainer.stop(clock.monotonicMs());
    expect(sink.events.slice(2).sort()).toEqual(
      ["aborted r1,r2: shutdown deadline reached", "aborted r3,r4: shutdown deadline reached", "close"].sort(),
    );
    expect(sink.events.at(-1)).toBe("close");
  });

  it("a pipelined send still out when the deadline passes is aborted and answered before the sink is closed", async () => {
    const sink = new AbortAwareSink({}, 2, 2);
    const answers: Array<() => void> = [];
    sink.send = (batch: readonly OutboxEntry[], signal?: AbortSignal) => {
      const ids = batch.map((e) => e.record.RecordId).join(",");
      sink.events.push(`send ${ids}`);
      return new Promise<SendOutcomes>((resolve) => {
        let answered = false;
        answers.push(() => {
          answered = true;
          resolve(allOutcomes(batch, delivered));
        });
        signal!.addEventListener("abort", () => {
          if (answered) return;
          sink.events.push(`aborted ${ids}`);
          resolve(allOutcomes(batch, retry("aborted")));
        });
      });
    };
    const drainer = drainerFor(sink);
    add(transition(1), transition(2), transition(3), transition(4));
    drainer.notify();
    await flushAsync();
    expect(sink.events).toEqual(["send r1,r2", "send r3,r4"]);
    const stopping = drainer.stop(clock.monotonicMs() + 100);
    clock.jump(200); // the flush deadline has passed (on the agent's clock) while both sends are out
    answers.shift()!(); // the first answers: the loop sees the deadline and ends with the second still out
    await stopping;
    expect(sink.events).toEqual(["send r1,r2", "send r3,r4", "aborted r3,r4", "close"]);
    expect(store.due("aborting", 10, Number.MAX_SAFE_INTEGER).map((e) => e.record.RecordId)).toEqual(["r3", "r4"]);
  });

  it("leaves a sink that ignores the abort a second past the deadline, and one whose close hangs or fails, saying so", async () => {
    const log = capturedLogger();
    const deaf = new AbortAwareSink({ deaf: true, close: "hang" });
    const drainer = drainerFor(deaf, new AgentMetrics(), undefined, log.logger);
    add(transition(1));
    drainer.notify();
    await flushAsync();
    const startedMs = performance.now();
    await drainer.stop(clock.monotonicMs() + 50);
    expect(performance.now() - startedMs).toBeGreaterThanOrEqual(1000);
    expect(
      log
        .lines()
        .filter((l) => l.level === "warn")
        .map((l) => [l.msg, l.sink, l.timeoutMs]),
    ).toEqual([
      ["sink did not stop sending by the shutdown deadline; leaving it", "aborting", undefined],
      ["sink did not close in time; leaving it", "aborting", 1000],
    ]);
    const failing = capturedLogger();
    const refusing = new AbortAwareSink({ close: "fail" });
    Object.defineProperty(refusing, "name", { value: "refusing" });
    const second = drainerFor(refusing, new AgentMetrics(), undefined, failing.logger);
    await second.stop(clock.monotonicMs());
    expect(failing.lines().filter((l) => l.level === "warn")).toEqual([
      expect.objectContaining({
        msg: "sink close failed",
        sink: "refusing",
        err: expect.objectContaining({ message: "close refused" }),
      }),
    ]);
  });
});
