// The partition processor against an in-memory state store and a scripted target: outcomes answered together are
// saved in one write (not one write each), a claim left by a stopped instance is re-sent once, logged and counted as
// in doubt with the same idempotency key, and outcomes whose save failed are saved by the next run, not re-sent.
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import pino from "pino";
import { Writable } from "node:stream";
import { eventKeyOf, type FleetEvent } from "../../src/fleet/fleet-event.js";
import { FleetMetrics } from "../../src/fleet/metrics.js";
import { notificationIdempotencyKey } from "../../src/fleet/notification-plan.js";
import {
  isStorageFailure,
  PartitionProcessor,
  skippedLoggedPerBatch,
  type NotificationIdentity,
  type ProcessorOptions,
  type ReceivedEvent,
} from "../../src/fleet/partition-processor.js";
import {
  emptyPartitionState,
  OwnershipLostError,
  type LoadedPartitionState,
  type PartitionState,
  type PartitionStateStore,
} from "../../src/fleet/partition-state.js";
import type { DeliveryOutcome } from "../../src/fleet/targets/deliver.js";
import { fleetTransition, vm } from "./records.js";
import { FakeClock, flushAsync, instantClock } from "../helpers/fake-clock.js";
import { metricValue } from "../helpers/metrics.js";
import { propertyParams } from "../helpers/seed.js";
import { partitionIndexForKey } from "../../src/contract/partition-hash.js";
import { pagerDutySeverity } from "../../src/fleet/targets/payloads.js";
import { defaultPartitionBounds, KnownReporters } from "../../src/fleet/partition-bounds.js";

/** The in-doubt series of the pd target's trigger taken over from a stopped instance. */
const inDoubt = { target: "pd", action: "trigger", cause: "claim_taken_over" };
const t0 = Date.parse("2026-11-23T10:00:00Z");

/** The processor's clock over the tests' fake clock; the wall reading is the test's own `nowMs` when it moves it. */
function processorClock(clock: FakeClock, nowMs: () => number = () => clock.now()): ProcessorOptions["clock"] {
  return { nowMs, monotonicMs: () => clock.monotonicMs(), sleep: (ms, signal) => clock.sleep(ms, signal) };
}

/** Keeps the state as JSON with a version (ETag); each save can be held open (a slow blob write) or made to fail. */
class MemoryStore implements PartitionStateStore {
  saved: string = JSON.stringify(emptyPartitionState());
  version = 0;
  saves = 0;
  hold: Promise<void> | null = null;
  /** Save calls (1-based) that fail. */
  readonly failing = new Set<number>();
  private calls = 0;
  async load(): Promise<LoadedPartitionState> {
    return {
      state: JSON.parse(this.saved) as PartitionState,
      etag: this.version === 0 ? undefined : String(this.version),
    };
  }
  async save(_partitionId: string, state: PartitionState, etag: string | undefined): Promise<string> {
    const body = JSON.stringify(state);
    if (this.hold) await this.hold;
    if (this.failing.has(++this.calls)) throw new Error("blob storage is unavailable");
    if (etag !== (this.version === 0 ? undefined : String(this.version)))
      throw new OwnershipLostError("written by another holder");
    this.saves++;
    this.saved = body;
    return String(++this.version);
  }
}

interface Sent {
  readonly target: string;
  readonly notification: NotificationIdentity;
  readonly eventId: string;
  /** What the notification said the event is, and its NotBefore. */
  readonly eventType: string;
  readonly notBefore: string | null;
  readonly status: string;
}

function setup(
  store: MemoryStore,
  answer: (sent: Sent, requestSignal: AbortSignal) => Promise<DeliveryOutcome>,
  nowMs = () => t0,
) {
  const sent: Sent[] = [];
  const lines: string[] = [];
  const logger = pino(
    { level: "warn" },
    new Writable({ write: (chunk, _enc, done) => (lines.push(String(chunk)), done()) }),
  );
  const metrics = new FleetMetrics(["pd", "chat"]);
  const options: ProcessorOptions = {
    partitionId: "0",
    rules: [{ name: "all", targets: ["pd", "chat"] }],
    updateIntervalMs: 60_000,
    staleClaimMs: 10_000,
    lateNoticeMs: 3_600_000,
    retry: { minDelayMs: 1, maxDelayMs: 1, giveUpAfterMs: 60_000 },
    retainEndedMs: 7 * 24 * 3600_000,
    store,
    send: (target, notification, event: FleetEvent, requestSignal) => {
      const s = {
        target,
        notification,
        eventId: event.eventId,
        eventType: event.eventType,
        notBefore: event.notBefore,
        status: event.status,
      };
      sent.push(s);
      return answer(s, requestSignal);
    },
    clock: processorClock(instantClock(t0), nowMs),
    logger,
    metrics,
    signal: new AbortController().signal,
  };
  return { sent, lines, metrics, options };
}

const eventId = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, "0")}`;
const eventKey = (n: number) => eventKeyOf(eventId(n));

function wave(events: number, firstSequence = 0): ReceivedEvent[] {
  const vms = [vm(0), vm(1)];
  return Array.from({ length: events }, (_, e) => ({
    body: fleetTransition(`00000000-0000-4000-8000-${String(e).padStart(12, "0")}`, "Scheduled", vms[0]!, vms, {
      timeMs: t0,
    }),
    sequenceNumber: firstSequence + e,
    offset: String(firstSequence + e),
  }));
}

const delivered: DeliveryOutcome = { kind: "delivered", status: 202 };

describe("PartitionProcessor", () => {
  it("saves the outcomes answered while a write is in flight together, in one write", async () => {
    const store = new MemoryStore();
    let release!: () => void;
    const answers: Array<() => void> = [];
    const { sent, options, metrics } = setup(
      store,
      () => new Promise((resolve) => answers.push(() => resolve(delivered))),
    );
    const processor = await PartitionProcessor.open(options);
    const done = processor.processBatch(wave(50));
    while (answers.length < 100) await new Promise((r) => setImmediate(r));
    expect(store.saves).toBe(1); // the claims, before any request left
    // The first answer starts a write; it is held open (a slow blob write) while the other 99 answers arrive.
    store.hold = new Promise((r) => (release = r));
    answers[0]!();
    await new Promise((r) => setImmediate(r));
    for (const answer of answers.slice(1)) answer();
    await new Promise((r) => setTimeout(r, 10));
    store.hold = null;
    release();
    await done;
    // One write for the claims, one for the first outcome, one for the 99 answered meanwhile (not 100 one by one).
    expect(store.saves).toBe(3);
    expect(metricValue(await metrics.registry.metrics(), "sef_fleet_outcome_saves_total")).toBe(2);
    const { state } = await store.load();
    const states = Object.values(state.notifications).flatMap((byTarget) => Object.values(byTarget));
    expect(states).toHaveLength(100);
    expect(states.every((s) => s.pending === null && s.triggeredAt !== null && s.sent === 1)).toBe(true);
    expect(new Set(sent.map((s) => s.notification.idempotencyKey)).size).toBe(100);
  });

  it("writes nothing more for outcomes a fold queued meanwhile already saved", async () => {
    const store = new MemoryStore();
    const answers = new Map<string, () => void>();
    const { options, metrics } = setup(
      store,
      (s) => new Promise((resolve) => answers.set(s.target, () => resolve(delivered))),
    );
    const processor = await PartitionProcessor.open(options);
    const { notified } = await processor.foldBatch(wave(1));
    while (answers.size < 2) await flushAsync(1);
    let release!: () => void;
    store.hold = new Promise((r) => (release = r));
    answers.get("pd")!(); // its outcome's write starts, and is held
    await flushAsync();
    // A batch folded meanwhile waits for that write; chat's outcome, answered now, goes with the batch's save.
    const folded = processor.foldBatch([receivedAt(1, { ContractVersion: 1, RecordType: "Heartbeat" })]);
    answers.get("chat")!();
    await flushAsync();
    store.hold = null;
    release();
    await folded;
    await notified;
    expect(store.saves).toBe(3); // the claims, pd's outcome, the batch with chat's outcome: no empty write after
    expect(metricValue(await metrics.registry.metrics(), "sef_fleet_outcome_saves_total")).toBe(1);
    const { state } = await store.load();
    expect(Object.values(state.notifications[eventKey(0)]!).map((n) => [n.pending, n.sent])).toEqual([
      [null, 1],
      [null, 1],
    ]);
  });

  it("folds the next batch while a slow target still answers the last one's sends, and never claims its own queued send again", async () => {
    const store = new MemoryStore();
    let now = t0;
    const answers: Array<() => void> = [];
    const { sent, options } = setup(
      store,
      () => new Promise<DeliveryOutcome>((resolve) => answers.push(() => resolve(delivered))),
      () => now,
    );
    const processor = await PartitionProcessor.open(options);
    // The first batch is durable with its claims while both of its sends are unanswered: the checkpoint may move.
    const first = await processor.foldBatch(wave(1));
    expect(sent.map((s) => s.eventId)).toEqual([eventId(0), eventId(0)]);
    const claimed = (await store.load()).state.notifications[eventKey(0)]!;
    expect([claimed.pd?.pending?.action, claimed.chat?.pending?.action]).toEqual(["trigger", "trigger"]);
    // Long past staleClaimMs the event's VM reports again, and a new event comes: only the new one is sent.
    now = t0 + 60_000;
    const second = await processor.foldBatch(wave(2, 1));
    await processor.tick();
    expect(sent.map((s) => s.eventId)).toEqual([eventId(0), eventId(0), eventId(1), eventId(1)]);
    for (const answer of answers) answer();
    await Promise.all([first.notified, second.notified]);
    const state = (await store.load()).state;
    for (const n of [0, 1]) {
      const { pd, chat } = state.notifications[eventKey(n)]!;
      expect([pd?.pending, chat?.pending, pd?.sent, chat?.sent]).toEqual([null, null, 1, 1]);
    }
    expect(state.sequenceNumber).toBe(2);
  });

  it("re-sends a claim a stopped instance left once it is stale, with the same idempotency key, logged and counted as in doubt", async () => {
    const store = new MemoryStore();
    let now = t0;
    // The stopped instance: claims saved, requests sent, killed before any outcome was saved.
    const first = setup(
      store,
      () => new Promise<DeliveryOutcome>(() => undefined),
      () => now,
    );
    const stopped = await PartitionProcessor.open(first.options);
    void stopped.processBatch(wave(1));
    while (first.sent.length < 2) await new Promise((r) => setImmediate(r));
    const keyOf = (target: string) => first.sent.find((s) => s.target === target)!.notification.idempotencyKey;
    expect(keyOf("pd")).toBe(notificationIdempotencyKey("00000000-0000-4000-8000-000000000000", "pd", "trigger", 1));

    const next = setup(
      store,
      async () => delivered,
      () => now,
    );
    const owner = await PartitionProcessor.open(next.options);
    await owner.tick();
    expect(next.sent).toEqual([]); // a fresh claim belongs to its holder
    now = t0 + 10_000;
    const savesBefore = store.saves;
    await owner.tick();
    expect(next.sent.map((s) => [s.target, s.notification.action, s.notification.idempotencyKey])).toEqual([
      ["pd", "trigger", keyOf("pd")],
      ["chat", "trigger", keyOf("chat")],
    ]);
    // The claims taken over are saved (with their new time) before they are sent, then the outcomes.
    const outcomeSaves = metricValue(await next.metrics.registry.metrics(), "sef_fleet_outcome_saves_total");
    expect(store.saves - savesBefore - outcomeSaves).toBe(1);
    const warnings = next.lines.map(
      (l) => JSON.parse(l) as { msg: string; target: string; action: string; claimAgeMs: number },
    );
    expect(
      warnings.filter((w) => w.msg.startsWith("re-sending a claim left by an instance that stopped mid-send")),
    ).toHaveLength(2);
    expect(warnings[0]).toMatchObject({ action: "trigger", claimAgeMs: 10_000 });
    expect(metricValue(await next.metrics.registry.metrics(), "sef_fleet_notifications_in_doubt_total", inDoubt)).toBe(
      1,
    );
    await owner.tick();
    expect(next.sent).toHaveLength(2); // once
  });

  it("lets a request already sent finish when its partition closes, and saves the outcome: the next owner has nothing to re-send", async () => {
    const store = new MemoryStore();
    let now = t0;
    const answers: Array<() => void> = [];
    // A target that answers when told to; a request cut off by its signal ends in doubt (as undici's would).
    const closing = setup(
      store,
      (_sent, requestSignal) =>
        new Promise((resolve) => {
          answers.push(() => resolve(delivered));
          requestSignal.addEventListener("abort", () =>
            resolve({ kind: "retry", reason: "shutting down", inDoubt: true }),
          );
        }),
      () => now,
    );
    const controller = new AbortController();
    // Time stands still (nothing advances this clock): the close waits for the answers, not for its bound.
    const clock = new FakeClock(t0);
    const holder = await PartitionProcessor.open({
      ...closing.options,
      clock: processorClock(clock, () => now),
      signal: controller.signal,
    });
    void holder.processBatch(wave(1)).catch(() => undefined);
    while (closing.sent.length < 2) await new Promise((r) => setImmediate(r));
    controller.abort(); // ownership lost while both requests are in flight
    const settled = holder.settled(5000);
    for (const answer of answers) answer();
    await settled;
    expect(clock.pendingSleeps, "the bound's wait, ended once all was settled").toBe(0);
    const { state } = await store.load();
    expect(
      Object.values(state.notifications["00000000-0000-4000-8000-000000000000"]!).map((s) => ({
        pending: s.pending,
        sent: s.sent,
      })),
    ).toEqual([
      { pending: null, sent: 1 },
      { pending: null, sent: 1 },
    ]);
    const next = setup(
      store,
      async () => delivered,
      () => now,
    );
    const owner = await PartitionProcessor.open(next.options);
    now = t0 + 60_000;
    await owner.tick();
    expect(next.sent).toEqual([]);
    expect(metricValue(await next.metrics.registry.metrics(), "sef_fleet_notifications_in_doubt_total", inDoubt)).toBe(
      0,
    );
  });

  it("gives up waiting for a closing partition's requests after the bound", async () => {
    const store = new MemoryStore();
    const { options, sent } = setup(store, () => new Promise<DeliveryOutcome>(() => undefined));
    const clock = new FakeClock(t0);
    const controller = new AbortController();
    const holder = await PartitionProcessor.open({
      ...options,
      clock: processorClock(clock),
      signal: controller.signal,
    });
    void holder.processBatch(wave(1)).catch(() => undefined);
    while (sent.length < 2) await flushAsync(1);
    controller.abort();
    let settled = false;
    void holder.settled(200).then(() => (settled = true));
    await clock.advance(199);
    expect(settled, "settled before its bound, with requests unanswered").toBe(false);
    await clock.advance(1);
    expect(settled, "still waiting past its bound").toBe(true);
  });

  it("keeps outcomes whose save failed and saves them with the next run instead of sending again", async () => {
    const store = new MemoryStore();
    let now = t0;
    const { sent, options } = setup(
      store,
      async () => delivered,
      () => now,
    );
    const processor = await PartitionProcessor.open(options);
    store.failing.add(2); // the claims are saved, the requests answered, then the outcomes' write fails
    await expect(processor.processBatch(wave(1))).rejects.toThrow("blob storage is unavailable");
    expect(sent).toHaveLength(2);
    now = t0 + 60_000; // long after the claims went stale
    await processor.tick();
    expect(sent).toHaveLength(2);
    const saves = store.saves;
    await processor.tick(); // the outcomes are saved: nothing left to write
    expect(store.saves).toBe(saves);
    const { state } = await store.load();
    const states = Object.values(state.notifications["00000000-0000-4000-8000-000000000000"]!);
    expect(states.map((s) => ({ pending: s.pending, sent: s.sent }))).toEqual([
      { pending: null, sent: 1 },
      { pending: null, sent: 1 },
    ]);
  });

  it("never lets a holder with a stale copy overwrite a newer state, even two holders of one partition in one process", async () => {
    const store = new MemoryStore();
    let now = t0;
    // The old holder claims and sends; its answers are slow.
    const answers: Array<() => void> = [];
    const old = setup(
      store,
      () => new Promise((resolve) => answers.push(() => resolve(delivered))),
      () => now,
    );
    const oldHolder = await PartitionProcessor.open(old.options);
    const oldRun = oldHolder.processBatch(wave(1));
    while (old.sent.length < 2) await new Promise((r) => setImmediate(r));
    // The partition moves: the new holder reads the state (the old holder's claims) and folds a new event.
    const next = setup(
      store,
      async () => delivered,
      () => now,
    );
    const newHolder = await PartitionProcessor.open(next.options);
    await newHolder.processBatch(
      wave(2)
        .slice(1)
        .map((e) => ({ ...e, sequenceNumber: 1 })),
    );
    expect(next.sent.map((s) => s.eventId)).toEqual([
      "00000000-0000-4000-8000-000000000001",
      "00000000-0000-4000-8000-000000000001",
    ]);
    // The old holder's answers arrive: its write conflicts, it reads the new state and records its outcomes there.
    for (const answer of answers) answer();
    await oldRun;
    const { state } = await store.load();
    const told = (key: string) =>
      Object.values(state.notifications[key]!).map((s) => ({ pending: s.pending, sent: s.sent }));
    expect(told("00000000-0000-4000-8000-000000000000")).toEqual([
      { pending: null, sent: 1 },
      { pending: null, sent: 1 },
    ]);
    expect(told("00000000-0000-4000-8000-000000000001")).toEqual([
      { pending: null, sent: 1 },
      { pending: null, sent: 1 },
    ]);
    now = t0 + 60_000;
    await newHolder.tick();
    await oldHolder.tick();
    expect(old.sent.length + next.sent.length).toBe(4); // nothing sent twice
  });

  it("counts an attempt after an unanswered one (a timeout) as in doubt, with the same idempotency key; a refused connection is not", async () => {
    const store = new MemoryStore();
    const answers: DeliveryOutcome[] = [
      { kind: "retry", reason: "timed out after 10000 ms", inDoubt: true },
      { kind: "retry", reason: "network: ECONNREFUSED", inDoubt: false },
      delivered,
    ];
    const { sent, options, metrics, lines } = setup(store, async (s) =>
      s.target === "pd" ? (answers.shift() ?? delivered) : delivered,
    );
    const processor = await PartitionProcessor.open(options);
    await processor.processBatch(wave(1));
    const pd = sent.filter((s) => s.target === "pd");
    expect(pd).toHaveLength(3);
    expect(new Set(pd.map((s) => s.notification.idempotencyKey)).size).toBe(1);
    const text = await metrics.registry.metrics();
    expect(
      metricValue(text, "sef_fleet_notifications_in_doubt_total", { ...inDoubt, cause: "attempt_unanswered" }),
    ).toBe(1);
    expect(lines.filter((l) => l.includes("unanswered attempt may have reached the target"))).toHaveLength(1);
  });
});

/** Keys that name members of Object.prototype, in the casings a sender may try (the fleet lower-cases EventIds). */
const prototypeKeys = [
  "__proto__",
  "__PROTO__",
  "__Proto__",
  "constructor",
  "CONSTRUCTOR",
  "toString",
  "hasOwnProperty",
];

function receivedAt(sequenceNumber: number, body: unknown): ReceivedEvent {
  return { body, sequenceNumber, offset: String(sequenceNumber) };
}

function metricLine(text: string, outcome: string): number {
  return Number(new RegExp(`^sef_fleet_records_total\\{outcome="${outcome}"\\} (\\d+)$`, "m").exec(text)?.[1] ?? -1);
}

describe("PartitionProcessor, given records from any sender", () => {
  const real = "c0ffee00-0000-4000-8000-000000000001";
  const vms = [vm(0), vm(1)];

  it("counts and skips EventIds that are not GUIDs (__proto__, constructor, …), keeps keys like __proto__ in other fields as data, and pages the real events behind them", async () => {
    const store = new MemoryStore();
    const { sent, options, metrics, lines } = setup(store, async () => delivered);
    const processor = await PartitionProcessor.open(options);
    const forged = prototypeKeys.map((id) => fleetTransition(id, "Scheduled", vms[0]!, vms, { timeMs: t0 }));
    // A GUID EventId whose reporter and tags are named like prototype members: ordinary keys of the fleet's state.
    const oddReporter = {
      ...fleetTransition(real, "Scheduled", vms[0]!, vms, { timeMs: t0 }),
      AgentId: "__proto__",
      Tags: JSON.parse('{"__proto__": "x", "constructor": "y"}') as Record<string, string>,
    };
    const batch = [...forged, oddReporter, fleetTransition(real, "Scheduled", vms[1]!, vms, { timeMs: t0 })];
    await processor.processBatch(batch.map((body, i) => receivedAt(i, body)));

    expect(sent.map((s) => [s.target, s.eventId])).toEqual([
      ["pd", real],
      ["chat", real],
    ]);
    const text = await metrics.registry.metrics();
    expect(metricLine(text, "event-id")).toBe(prototypeKeys.length);
    expect(metricLine(text, "folded")).toBe(2);
    expect(lines.filter((l) => l.includes("is not a GUID"))).toHaveLength(prototypeKeys.length);
    // The state read back (JSON, as the blob holds it) has the one event, both reporters, and nothing inherited.
    const reopened = await PartitionProcessor.open(options);
    expect(reopened.lastSequenceNumber).toBe(batch.length - 1);
    const { state } = await store.load();
    expect(Object.keys(state.events)).toEqual([real]);
    expect(Object.keys(state.events[real]!.vms).sort()).toEqual(["__proto__", "agent-web-vmss_1"]);
    expect(({} as Record<string, unknown>).status).toBeUndefined();
    // The reporter named __proto__ ends its part of the event like any other.
    await reopened.processBatch([
      receivedAt(batch.length, { ...oddReporter, EventStatus: "Completed", PreviousStatus: "Scheduled" }),
      receivedAt(batch.length + 1, fleetTransition(real, "Completed", vms[1]!, vms, { timeMs: t0 })),
    ]);
    expect(sent.slice(2).map((s) => s.notification.action)).toEqual(["resolve", "resolve"]);
  });

  it("skips a record whose reading or folding throws, counting it and logging its EventId, and folds the rest of the batch", async () => {
    const store = new MemoryStore();
    const { sent, options, metrics, lines } = setup(store, async () => delivered);
    const processor = await PartitionProcessor.open(options);
    const good = fleetTransition(real, "Scheduled", vms[0]!, vms, { timeMs: t0 });
    const other = "c0ffee00-0000-4000-8000-000000000002";
    // A body whose Description answers the reader's checks, then throws when the fold reads it again.
    let reads = 0;
    const treacherous = Object.defineProperty(
      { ...fleetTransition(other, "Scheduled", vms[0]!, vms, { timeMs: t0 }) },
      "Description",
      {
        enumerable: true,
        get: () => {
          if (++reads > 2) throw new RangeError("changed while read"); // read twice by the checks, then by the fold
          return "";
        },
      },
    );
    const throwing = Object.defineProperty({}, "RecordType", {
      enumerable: true,
      get: () => {
        throw new TypeError("unreadable");
      },
    });
    await processor.processBatch([receivedAt(0, throwing), receivedAt(1, treacherous), receivedAt(2, good)]);
    expect(sent.map((s) => s.eventId)).toEqual([real, real]);
    const text = await metrics.registry.metrics();
    expect(metricLine(text, "unfoldable")).toBe(2);
    const errors = lines.map((l) => JSON.parse(l) as { msg: string; eventId?: string; sequenceNumber: number });
    const skipped = errors.filter((l) => l.msg === "skipped a record that could not be folded");
    expect(skipped.map((l) => [l.sequenceNumber, l.eventId])).toEqual([
      [0, undefined],
      [1, other],
    ]);
    expect(processor.lastSequenceNumber).toBe(2);
    expect(Object.keys((await store.load()).state.events)).toEqual([real]);
  });

  it('reads a NotBefore of "" as null (IMDS\'s own empty value): such a Completed resolves; a rejected record of an open event is logged with its EventId', async () => {
    const store = new MemoryStore();
    const { sent, options, lines } = setup(store, async () => delivered);
    const processor = await PartitionProcessor.open(options);
    await processor.processBatch([
      receivedAt(0, fleetTransition(real, "Scheduled", vms[0]!, [vms[0]!], { timeMs: t0 })),
    ]);
    const ended = { ...fleetTransition(real, "Completed", vms[0]!, [vms[0]!], { timeMs: t0 }), NotBefore: "" };
    await processor.processBatch([
      receivedAt(1, { ...ended, Resources: "web-vmss_0" }), // rejected: Resources is not a list
      receivedAt(2, ended),
    ]);
    expect(sent.map((s) => [s.target, s.notification.action])).toEqual([
      ["pd", "trigger"],
      ["chat", "trigger"],
      ["pd", "resolve"],
      ["chat", "resolve"],
    ]);
    const rejected = lines
      .map((l) => JSON.parse(l) as { msg: string; eventId?: string; openEvent?: boolean; detail?: string })
      .filter((l) => l.msg === "skipped an invalid record of an open event");
    expect(rejected).toEqual([
      expect.objectContaining({ eventId: real, openEvent: true, detail: expect.stringContaining("Resources") }),
    ]);
  });

  it("never stops on arbitrary JSON or half-valid records: every batch is saved past its last event and a real event after them is paged", async () => {
    const key = fc.constantFrom(...prototypeKeys, "EventId", "AgentId", "Resources", "Tags", "vms", "x");
    const junkValue = fc.oneof(fc.jsonValue(), fc.constantFrom(...prototypeKeys), fc.dictionary(key, fc.jsonValue()));
    const base = fleetTransition(real, "Scheduled", vms[0]!, vms, { timeMs: t0 });
    // A valid record with some of its columns replaced (EventId among them), or any JSON at all, as object or text.
    const halfValid = fc
      .dictionary(fc.constantFrom(...Object.keys(base)), junkValue, { maxKeys: 4 })
      .map((changes) => ({ ...base, ...changes }));
    // A valid record but for an EventId named like a member of Object.prototype.
    const forged = fc.constantFrom(...prototypeKeys).map((EventId) => ({ ...base, EventId }));
    const body = fc.oneof(
      fc.jsonValue(),
      forged,
      halfValid,
      halfValid.map((r) => Buffer.from(JSON.stringify(r))),
      fc.string().map((s) => Buffer.from(s)),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(body, { maxLength: 12 }), async (bodies) => {
        const store = new MemoryStore();
        const { sent, options } = setup(store, async () => delivered);
        const processor = await PartitionProcessor.open(options);
        const probe = "c0ffee00-0000-4000-8000-0000000000ff";
        await processor.processBatch(bodies.map((b, i) => receivedAt(i, b)));
        await processor.processBatch([
          receivedAt(bodies.length, fleetTransition(probe, "Started", vms[1]!, vms, { timeMs: t0 })),
        ]);
        expect(processor.lastSequenceNumber).toBe(bodies.length);
        expect(sent.filter((s) => s.eventId === probe).map((s) => s.target)).toEqual(["pd", "chat"]);
        expect(({} as Record<string, unknown>).vms).toBeUndefined();
      }),
      propertyParams(47_001, 60),
    );
  });
});

describe("PartitionProcessor, given forged records on the right partition or a wrong one", () => {
  const vms = [vm(0), vm(1)];
  const placement = { index: 0, count: 4 };
  /** GUIDs whose Event Hubs hash names partition 0 of 4 (`here`) and another one (`elsewhere`). */
  const guids = Array.from({ length: 64 }, (_, i) => `feed0000-0000-4000-8000-${String(i).padStart(12, "0")}`);
  const here = guids.filter((id) => partitionIndexForKey(id, 4) === 0);
  const elsewhere = guids.filter((id) => partitionIndexForKey(id, 4) !== 0);

  it("drops and counts records whose EventId hashes to another partition: a forged Completed there never resolves the real incident", async () => {
    const store = new MemoryStore();
    const { sent, options, metrics, lines } = setup(store, async () => delivered);
    const processor = await PartitionProcessor.open({ ...options, placement });
    const real = here[0]!;
    // The real event, raised by both VMs on its own partition, is paged.
    await processor.processBatch(
      vms.map((v, i) => receivedAt(i, fleetTransition(real, "Scheduled", v, vms, { timeMs: t0 }))),
    );
    expect(sent.map((s) => [s.target, s.notification.action])).toEqual([
      ["pd", "trigger"],
      ["chat", "trigger"],
    ]);
    // A sender that chose this partition for another EventId, and one that sends the real EventId's end from a VM of
    // its own: the first is dropped; the second joins the event as a reporter and ends only its own part.
    const rogue = vm(7, "rogue-vmss");
    await processor.processBatch([
      receivedAt(2, fleetTransition(elsewhere[0]!, "Scheduled", rogue, [rogue], { timeMs: t0 })),
      receivedAt(3, fleetTransition(elsewhere[0]!, "Completed", rogue, [rogue], { timeMs: t0 })),
      receivedAt(4, fleetTransition(real, "Completed", rogue, vms, { timeMs: t0 })),
    ]);
    await processor.tick();
    expect(sent).toHaveLength(2); // nothing resolved, nothing paged for the misplaced EventId
    expect(metricLine(await metrics.registry.metrics(), "wrong-partition")).toBe(2);
    expect(lines.filter((l) => l.includes("does not hash to") && l.includes(elsewhere[0]!))).toHaveLength(2);
    // The VMs that raised it end it: then it resolves.
    await processor.processBatch(
      vms.map((v, i) => receivedAt(5 + i, fleetTransition(real, "Completed", v, vms, { timeMs: t0 }))),
    );
    expect(sent.slice(2).map((s) => [s.target, s.notification.action])).toEqual([
      ["pd", "resolve"],
      ["chat", "resolve"],
    ]);
  });

  it("keeps a paged event's type, description and NotBefore: a Reboot relabeled Freeze keeps its severity, and the change is logged", async () => {
    const store = new MemoryStore();
    const { sent, options, metrics, lines } = setup(store, async () => delivered);
    const processor = await PartitionProcessor.open({ ...options, placement, updateIntervalMs: 0 });
    const real = here[1]!;
    const notBefore = new Date(t0 + 15 * 60_000).toISOString();
    await processor.processBatch([
      receivedAt(0, fleetTransition(real, "Scheduled", vms[0]!, vms, { timeMs: t0, notBefore })),
    ]);
    const relabeled = {
      ...fleetTransition(real, "Scheduled", vms[1]!, vms, { timeMs: t0, eventType: "Freeze" }),
      Description: "<!channel> approve at <https://evil.example|Approve>",
      NotBefore: new Date(t0 + 24 * 3600_000).toISOString(),
    };
    await processor.processBatch([receivedAt(1, relabeled)]);
    expect(sent.map((s) => [s.notification.action, s.eventType, s.notBefore])).toEqual([
      ["trigger", "Reboot", notBefore],
      ["trigger", "Reboot", notBefore],
      ["update", "Reboot", notBefore],
      ["update", "Reboot", notBefore],
    ]);
    expect(pagerDutySeverity(sent.at(-1)!.eventType)).toBe("warning");
    const { state } = await store.load();
    expect(state.events[real]).toMatchObject({
      eventType: "Reboot",
      description: "Host server is undergoing maintenance.",
    });
    const text = await metrics.registry.metrics();
    for (const field of ["eventType", "description", "notBefore"])
      expect(metricValue(text, "sef_fleet_event_changes_ignored_total", { field })).toBe(1);
    const noted = lines.map((l) => JSON.parse(l) as Record<string, unknown> & { msg: string });
    expect(
      noted
        .filter((l) => l.msg.startsWith("a record would change a paged event"))
        .map((l) => [l.partitionId, l.field, l.eventId, l.kept, l.offered]),
    ).toEqual([
      ["0", "eventType", real, "Reboot", '"Freeze"'],
      ["0", "description", real, "Host server is undergoing maintenance.", JSON.stringify(relabeled.Description)],
      ["0", "notBefore", real, notBefore, JSON.stringify(relabeled.NotBefore)],
    ]);
  });
});

describe("PartitionProcessor, given an oversized or a flooding sender", () => {
  const vms = [vm(0), vm(1)];
  const guid = (n: number) => `f100d000-0000-4000-8000-${String(n).padStart(12, "0")}`;

  it("rejects records past the size limits, whatever column carries the bulk, and folds the rest", async () => {
    const store = new MemoryStore();
    const { sent, options, metrics } = setup(store, async () => delivered);
    const processor = await PartitionProcessor.open(options);
    const base = fleetTransition(guid(1), "Scheduled", vms[0]!, vms, { timeMs: t0 });
    const oversized = [
      { ...base, Description: "x".repeat(100_000) },
      { ...base, VmName: "v".repeat(10_000) },
      { ...base, Resources: Array.from({ length: 5000 }, (_, i) => `vm${i}`) },
      { ...base, Tags: Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`t${i}`, "v"])) },
    ];
    await processor.processBatch([...oversized, base].map((body, i) => receivedAt(i, body)));
    expect(metricLine(await metrics.registry.metrics(), "too-large")).toBe(oversized.length);
    expect(sent.map((s) => s.eventId)).toEqual([guid(1), guid(1)]);
    expect(Buffer.byteLength((store.saved as string) ?? "")).toBeLessThan(10_000);
  });

  it("drops a flood of invented EventIds past each reporter's rate and the partition's bound, pages a real event, and prunes what never ended", async () => {
    const store = new MemoryStore();
    let now = t0;
    const { sent, options, metrics, lines } = setup(
      store,
      async () => delivered,
      () => now,
    );
    const bounds = { ...defaultPartitionBounds, maxEventsPerPartition: 50, newEventsPerReporterPerMinute: 10 };
    const processor = await PartitionProcessor.open({ ...options, bounds, rules: [{ name: "all", targets: ["pd"] }] });
    const rogue = vm(7, "rogue-vmss");
    // One reporter inventing 200 EventIds: 10 pass its rate. Then 100 reporters with 2 each: the partition fills at 50.
    const flood = [
      ...Array.from({ length: 200 }, (_, i) =>
        fleetTransition(guid(1000 + i), "Scheduled", rogue, [rogue], { timeMs: t0 }),
      ),
      ...Array.from({ length: 200 }, (_, i) =>
        fleetTransition(guid(2000 + i), "Scheduled", vm(100 + (i >> 1), "rogue-vmss"), [rogue], { timeMs: t0 }),
      ),
    ];
    await processor.processBatch(flood.map((body, i) => receivedAt(i, body)));
    const text = await metrics.registry.metrics();
    expect(metricLine(text, "rate-limited")).toBe(190);
    expect(metricLine(text, "partition-full")).toBe(200 - 40);
    expect(lines.filter((l) => l.includes("dropped records past the partition's bounds"))).toHaveLength(2);
    expect(Object.keys((await store.load()).state.events)).toHaveLength(50);
    // A record of an event already known still folds; a real new event waits for room, which pruning makes.
    now = t0 + defaultPartitionBounds.retainOpenMs + 1;
    await processor.tick(); // the flood's events, never ended and not mentioned for retainOpenMs, are forgotten
    expect(Object.keys((await store.load()).state.events)).toHaveLength(0);
    const real = guid(1);
    await processor.processBatch([receivedAt(400, fleetTransition(real, "Scheduled", vms[0]!, vms, { timeMs: now }))]);
    expect(sent.at(-1)).toMatchObject({ target: "pd", eventId: real });
  });

  it("bounds a flood of invented reporters by the partition's rate, and still opens a known reporter's real event", async () => {
    const store = new MemoryStore();
    let now = t0;
    const { sent, options, metrics } = setup(
      store,
      async () => delivered,
      () => now,
    );
    const rules = [{ name: "all", targets: ["pd"] }];
    // The real VM reported before (its event is in the saved state): known to the next owner of the partition.
    const before = await PartitionProcessor.open({ ...options, rules });
    await before.processBatch([receivedAt(0, fleetTransition(guid(1), "Scheduled", vms[0]!, vms, { timeMs: t0 }))]);
    const bounds = { ...defaultPartitionBounds, newEventsPerPartitionPerMinute: 20 };
    const processor = await PartitionProcessor.open({ ...options, rules, bounds });
    // 300 invented EventIds, each from a reporter of its own (every one within the per-reporter rate).
    const flood = Array.from({ length: 300 }, (_, i) =>
      receivedAt(1 + i, fleetTransition(guid(5000 + i), "Scheduled", vm(500 + i, "rogue"), [vm(500 + i, "rogue")])),
    );
    const real = guid(2);
    const newcomer = vm(9, "fresh");
    await processor.processBatch([
      ...flood,
      receivedAt(301, fleetTransition(real, "Scheduled", vms[0]!, vms, { timeMs: t0 })),
      receivedAt(302, fleetTransition(guid(3), "Scheduled", newcomer, [newcomer], { timeMs: t0 })),
    ]);
    const text = await metrics.registry.metrics();
    expect(metricLine(text, "partition-rate-limited")).toBe(280 + 1); // the flood past 20, and the newcomer
    expect(Object.keys((await store.load()).state.events)).toHaveLength(1 + 20 + 1);
    expect(sent.filter((s) => s.eventId === real)).toHaveLength(1);
    // The known VM's trigger is marked to go ahead of the flood's in a target's queue of sends.
    expect(sent.find((s) => s.eventId === real)?.notification.knownReporter).toBe(true);
    const floodIds = new Set(flood.map((r) => (r.body as { EventId: string }).EventId));
    expect(sent.filter((s) => floodIds.has(s.eventId)).map((s) => s.notification.knownReporter)).toEqual(
      Array.from({ length: 20 }, () => false),
    );
    // The next minute anyone may open events again, up to the partition's rate.
    now = t0 + 60_000;
    await processor.processBatch([receivedAt(303, fleetTransition(guid(3), "Scheduled", newcomer, [newcomer]))]);
    expect(sent.filter((s) => s.eventId === guid(3))).toHaveLength(1);
  });

  it("remembers at most maxReporters reporters: the not yet known are forgotten first, each one counted", () => {
    const forgotten: number[] = [];
    const known = new KnownReporters(1000, { maxReporters: 3, onForgotten: (n) => forgotten.push(n) });
    known.note("real-a", 0);
    known.note("real-b", 0);
    known.note("rogue-1", 5000);
    // Full: the one not yet known (first seen 0.5 s ago) makes room; the known stay known.
    known.note("rogue-2", 5500);
    expect([known.size, known.isKnown("real-a", 5500), known.isKnown("real-b", 5500)]).toEqual([3, true, true]);
    expect(forgotten).toEqual([1]);
    expect(known.isKnown("rogue-1", 9000)).toBe(false); // forgotten: first seen again when it reports again
    // Every one known: a newcomer is not remembered, and counted.
    known.note("rogue-3", 9000);
    expect([known.size, known.isKnown("rogue-2", 9000), known.isKnown("rogue-3", 20_000)]).toEqual([3, true, false]);
    expect(forgotten).toEqual([1, 1]);
  });

  it("knows a VM on every partition of the instance once it reported on one of them, an hour ago", async () => {
    const known = new KnownReporters(defaultPartitionBounds.reporterKnownAfterMs);
    let now = t0;
    const one = setup(
      new MemoryStore(),
      async () => delivered,
      () => now,
    );
    const partitionA = await PartitionProcessor.open({ ...one.options, knownReporters: known });
    await partitionA.processBatch([
      receivedAt(0, fleetTransition(guid(10), "Scheduled", vms[0]!, vms, { timeMs: t0 })),
    ]);
    const other = setup(
      new MemoryStore(),
      async () => delivered,
      () => now,
    );
    const bounds = { ...defaultPartitionBounds, newEventsPerPartitionPerMinute: 1 };
    const partitionB = await PartitionProcessor.open({
      ...other.options,
      partitionId: "1",
      bounds,
      knownReporters: known,
    });
    const newcomer = (n: number) => vm(n, "fresh");
    const opening = (seq: number, n: number, reporter: ReturnType<typeof vm>) =>
      receivedAt(seq, fleetTransition(guid(n), "Scheduled", reporter, [reporter], { timeMs: now }));
    now = t0 + defaultPartitionBounds.reporterKnownAfterMs - 1;
    await partitionB.processBatch([opening(0, 11, newcomer(1)), opening(1, 12, vms[0]!)]);
    expect(other.sent.map((s) => s.eventId)).toEqual([guid(11), guid(11)]); // not known for an hour yet
    now = t0 + defaultPartitionBounds.reporterKnownAfterMs + 60_000;
    await partitionB.processBatch([opening(2, 13, newcomer(2)), opening(3, 14, vms[0]!), opening(4, 15, newcomer(3))]);
    expect(other.sent.slice(2).map((s) => s.eventId)).toEqual([guid(13), guid(13), guid(14), guid(14)]);
    expect(metricLine(await other.metrics.registry.metrics(), "partition-rate-limited")).toBe(2);
  });

  it("reads a TimeGenerated far in the future as now, so it cannot keep an event from being pruned", async () => {
    const store = new MemoryStore();
    let now = t0;
    const { options } = setup(
      store,
      async () => delivered,
      () => now,
    );
    const processor = await PartitionProcessor.open(options);
    const farFuture = t0 + 365 * 24 * 3600_000;
    await processor.processBatch([
      receivedAt(0, fleetTransition(guid(3), "Scheduled", vms[0]!, vms, { timeMs: farFuture })),
      receivedAt(1, fleetTransition(guid(3), "Completed", vms[0]!, vms, { timeMs: farFuture })),
      receivedAt(2, fleetTransition(guid(3), "Scheduled", vms[1]!, vms, { timeMs: t0 + 60_000 })),
      receivedAt(3, fleetTransition(guid(3), "Completed", vms[1]!, vms, { timeMs: t0 + 60_000 })),
    ]);
    const event = (await store.load()).state.events[guid(3)]!;
    expect([event.firstSeen, event.lastSeen]).toEqual([
      new Date(t0).toISOString(),
      new Date(t0 + 60_000).toISOString(),
    ]);
    now = t0 + options.retainEndedMs + 120_000;
    await processor.tick();
    expect((await store.load()).state.events[guid(3)]).toBeUndefined();
  });
});

describe("PartitionProcessor, in detail", () => {
  const vms = [vm(0), vm(1)];
  const id = (n: number) => `de7a1100-0000-4000-8000-${String(n).padStart(12, "0")}`;
  const parsed = (lines: string[]) => lines.map((l) => JSON.parse(l) as Record<string, unknown> & { msg: string });

  it("dead-letters a refused notification with its reason, and one still failing past giveUpAfterMs with the attempts", async () => {
    const store = new MemoryStore();
    const deadLetters: Array<[string, string, string, string]> = [];
    const { options, metrics, lines } = setup(store, async (s) =>
      s.target === "pd"
        ? { kind: "rejected", reason: "HTTP 400: invalid routing key" }
        : { kind: "retry", reason: "HTTP 503", retryAfterMs: undefined },
    );
    const processor = await PartitionProcessor.open({
      ...options,
      retry: { minDelayMs: 1000, maxDelayMs: 1000, giveUpAfterMs: 2500 },
      onDeadLetter: async (target, action, event, reason) => {
        deadLetters.push([target, action, event.eventId, reason]);
        if (target === "chat") throw new Error("dead-letter store down");
      },
    });
    await processor.processBatch([receivedAt(0, fleetTransition(id(1), "Scheduled", vms[0]!, vms, { timeMs: t0 }))]);
    expect(deadLetters).toEqual([
      ["pd", "trigger", id(1), "HTTP 400: invalid routing key"],
      ["chat", "trigger", id(1), expect.stringMatching(/^gave up after [3-9] attempts in [2-4] s: HTTP 503$/)],
    ]);
    const { state } = await store.load();
    expect(state.notifications[id(1)]!.pd).toMatchObject({
      pending: null,
      deadLettered: "HTTP 400: invalid routing key",
    });
    expect(state.notifications[id(1)]!.chat!.pending).toBeNull();
    const text = await metrics.registry.metrics();
    const count = (target: string, outcome: string) =>
      metricValue(text, "sef_fleet_notifications_total", { target, action: "trigger", outcome });
    expect([count("pd", "dead_lettered"), count("chat", "dead_lettered"), count("chat", "sent")]).toEqual([1, 1, 0]);
    expect(count("chat", "retried")).toBeGreaterThanOrEqual(2);
    const logged = parsed(lines);
    expect(logged.filter((l) => l.msg === "notification dead-lettered").map((l) => [l.target, l.eventId])).toEqual([
      ["pd", id(1)],
      ["chat", id(1)],
    ]);
    expect(logged.find((l) => l.msg === "notification failed; retrying")).toMatchObject({
      target: "chat",
      action: "trigger",
      eventId: id(1),
      reason: "HTTP 503",
      attempt: 1,
      delayMs: expect.any(Number),
    });
    expect(logged.filter((l) => l.msg === "could not write the dead-letter entry")).toHaveLength(1);
    // Dead-lettered is final: a later tick sends nothing again.
    const before = metricValue(await metrics.registry.metrics(), "sef_fleet_notifications_total", {
      target: "pd",
      action: "trigger",
      outcome: "dead_lettered",
    });
    await processor.tick();
    expect(before).toBe(1);
  });

  it("counts each notification sent by target and action", async () => {
    const { options, metrics } = setup(new MemoryStore(), async () => delivered);
    const processor = await PartitionProcessor.open(options);
    await processor.processBatch([receivedAt(0, fleetTransition(id(30), "Scheduled", vms[0]!, vms, { timeMs: t0 }))]);
    const text = await metrics.registry.metrics();
    for (const target of ["pd", "chat"])
      expect(metricValue(text, "sef_fleet_notifications_total", { target, action: "trigger", outcome: "sent" })).toBe(
        1,
      );
  });

  it("fails the batch when the sender itself throws (a bug, not a delivery outcome), and tells it from a storage failure", async () => {
    const store = new MemoryStore();
    const bug = new TypeError("sender bug");
    const { options } = setup(store, () => Promise.reject(bug));
    const processor = await PartitionProcessor.open(options);
    await expect(
      processor.processBatch([receivedAt(0, fleetTransition(id(2), "Scheduled", vms[0]!, vms, { timeMs: t0 }))]),
    ).rejects.toBe(bug);
    expect(isStorageFailure(bug)).toBe(false);
    store.failing.add(2);
    const failed = await processor
      .processBatch([receivedAt(1, fleetTransition(id(3), "Scheduled", vms[0]!, vms, { timeMs: t0 }))])
      .catch((err: unknown) => err);
    expect((failed as Error).message).toBe("blob storage is unavailable");
    expect(isStorageFailure(failed)).toBe(true);
    expect([isStorageFailure("text"), isStorageFailure(null)]).toEqual([false, false]);
  });

  it("passes on a store's failure that is not an object (a string, null) as it is", async () => {
    for (const failure of ["disk full", null]) {
      const store = new MemoryStore();
      const { options } = setup(store, async () => delivered);
      const processor = await PartitionProcessor.open(options);
      store.save = () => Promise.reject(failure);
      const batch = [receivedAt(0, fleetTransition(id(40), "Scheduled", vms[0]!, vms, { timeMs: t0 }))];
      await expect(processor.processBatch(batch)).rejects.toBe(failure);
      const unreadable = { load: () => Promise.reject(failure), save: store.save.bind(store) };
      await expect(PartitionProcessor.open({ ...options, store: unreadable })).rejects.toBe(failure);
    }
  });

  it("gives up after five conflicting writes in a row, reloading before each, and logs each reload", async () => {
    const store = new MemoryStore();
    const { options, lines } = setup(store, async () => delivered);
    const processor = await PartitionProcessor.open(options);
    let loads = 0;
    const conflicting: PartitionStateStore = {
      load: async () => (loads++, store.load()),
      save: () => Promise.reject(new OwnershipLostError("written by another holder")),
    };
    const holder = await PartitionProcessor.open({ ...options, store: conflicting });
    loads = 0;
    await expect(
      holder.processBatch([receivedAt(0, fleetTransition(id(4), "Scheduled", vms[0]!, vms, { timeMs: t0 }))]),
    ).rejects.toBeInstanceOf(OwnershipLostError);
    expect(loads).toBe(5);
    const reloads = parsed(lines).filter((l) => l.msg === "fleet state was written by another instance; reloading");
    expect(reloads).toHaveLength(5);
    expect(reloads[0]).toMatchObject({ partitionId: "0" });
    expect(processor.lastSequenceNumber).toBe(-1);
  });

  it("writes nothing when nothing changed, never folds a sequence number twice, and counts open events only", async () => {
    const store = new MemoryStore();
    const { sent, options, metrics } = setup(store, async () => delivered);
    const processor = await PartitionProcessor.open(options);
    const batch = [
      receivedAt(0, fleetTransition(id(5), "Scheduled", vms[0]!, [vms[0]!], { timeMs: t0 })),
      receivedAt(1, fleetTransition(id(6), "Scheduled", vms[0]!, [vms[0]!], { timeMs: t0 })),
      receivedAt(2, fleetTransition(id(6), "Completed", vms[0]!, [vms[0]!], { timeMs: t0 })),
    ];
    await processor.processBatch(batch);
    await processor.tick(); // the ended event's resolves, due once its triggers went out
    expect(sent).toHaveLength(6);
    expect(processor.activeEvents).toBe(1);
    const saves = store.saves;
    await processor.tick(); // nothing due, nothing pruned
    await processor.processBatch(batch); // received again (from the checkpoint): not folded again
    expect(store.saves).toBe(saves);
    expect(metricLine(await metrics.registry.metrics(), "folded")).toBe(3);
    expect(sent).toHaveLength(6);
    // A record that is not a transition still moves the sequence number, and is saved.
    await processor.processBatch([receivedAt(3, { ContractVersion: 1, RecordType: "Heartbeat" })]);
    expect(store.saves).toBe(saves + 1);
    expect((await store.load()).state.sequenceNumber).toBe(3);
    expect(processor.lastSequenceNumber).toBe(3);
  });

  it("prunes an ended event after retainEndedMs and an open one after retainOpenMs, not a moment before", async () => {
    const store = new MemoryStore();
    let now = t0;
    const { options } = setup(
      store,
      async () => delivered,
      () => now,
    );
    const retainOpenMs = 10 * 24 * 3600_000;
    const processor = await PartitionProcessor.open({
      ...options,
      bounds: { ...defaultPartitionBounds, retainOpenMs },
    });
    await processor.processBatch([
      receivedAt(0, fleetTransition(id(7), "Scheduled", vms[0]!, [vms[0]!], { timeMs: t0 })),
      receivedAt(1, fleetTransition(id(7), "Completed", vms[0]!, [vms[0]!], { timeMs: t0 })),
      receivedAt(2, fleetTransition(id(8), "Scheduled", vms[0]!, [vms[0]!], { timeMs: t0 })),
    ]);
    const at = async (ms: number) => {
      now = t0 + ms;
      await processor.tick();
      return Object.keys((await store.load()).state.events).sort();
    };
    expect(await at(options.retainEndedMs)).toEqual([id(7), id(8)]);
    expect(await at(options.retainEndedMs + 1)).toEqual([id(8)]);
    expect(await at(retainOpenMs)).toEqual([id(8)]);
    expect(await at(retainOpenMs + 1)).toEqual([]);
  });

  it("keeps an event past its retention while a claim on it is pending, and sends that claim", async () => {
    const store = new MemoryStore();
    let now = t0;
    const stopped = setup(
      store,
      () => new Promise<DeliveryOutcome>(() => undefined),
      () => now,
    );
    void (await PartitionProcessor.open(stopped.options)).processBatch([
      receivedAt(0, fleetTransition(id(9), "Scheduled", vms[0]!, [vms[0]!], { timeMs: t0 })),
    ]);
    while (stopped.sent.length < 2) await new Promise((r) => setImmediate(r));
    const next = setup(
      store,
      async () => delivered,
      () => now,
    );
    const owner = await PartitionProcessor.open(next.options);
    now = t0 + defaultPartitionBounds.retainOpenMs + 1;
    await owner.tick();
    expect(next.sent.map((s) => [s.target, s.eventId])).toEqual([
      ["pd", id(9)],
      ["chat", id(9)],
    ]);
  });

  it("logs what it drops with the fields an operator searches by", async () => {
    const store = new MemoryStore();
    const { options, lines, metrics } = setup(store, async () => delivered);
    const placement = { index: 0, count: 4 };
    const onPartition = (want: number, from: number) => {
      for (let n = from; ; n++) if (partitionIndexForKey(id(n), placement.count) === want) return id(n);
    };
    const elsewhere = onPartition(1, 100);
    const here = onPartition(0, 100);
    const processor = await PartitionProcessor.open({
      ...options,
      placement,
      bounds: { ...defaultPartitionBounds, newEventsPerReporterPerMinute: 1 },
    });
    const long = `${"A".repeat(100)}`;
    await processor.processBatch([
      receivedAt(0, fleetTransition(elsewhere, "Completed", vms[0]!, vms, { timeMs: t0 })),
      receivedAt(1, { ...fleetTransition(here, "Scheduled", vms[0]!, vms, { timeMs: t0 }), EventId: long }),
      receivedAt(2, { ContractVersion: 1, RecordType: "Transition" }),
      receivedAt(3, fleetTransition(here, "Scheduled", vms[0]!, vms, { timeMs: t0 })),
      receivedAt(4, fleetTransition(onPartition(0, 1000), "Scheduled", vms[0]!, vms, { timeMs: t0 })),
      receivedAt(5, fleetTransition(onPartition(0, 2000), "Scheduled", vms[0]!, vms, { timeMs: t0 })),
      receivedAt(6, { ContractVersion: 1, RecordType: "Heartbeat", VmId: "x" }),
    ]);
    const logged = parsed(lines);
    expect(logged.find((l) => l.msg.startsWith("dropped a record sent to a partition"))).toMatchObject({
      partitionId: "0",
      offset: "0",
      sequenceNumber: 0,
      eventId: elsewhere,
      eventStatus: "Completed",
      vmName: JSON.stringify(vms[0]!.name),
    });
    const invalid = logged.filter((l) => l.msg === "skipped an event that is not a valid record");
    expect(invalid.map((l) => [l.sequenceNumber, l.eventId, l.openEvent])).toEqual([
      [1, long.slice(0, 80), undefined],
      [2, undefined, undefined],
    ]);
    expect(invalid[0]).toMatchObject({ partitionId: "0", offset: "1", reason: "event-id" });
    expect(logged.find((l) => l.msg === "dropped records past the partition's bounds")).toEqual(
      expect.objectContaining({
        partitionId: "0",
        outcome: "rate-limited",
        count: 2,
        firstEventId: onPartition(0, 1000),
      }),
    );
    const text = await metrics.registry.metrics();
    expect([metricLine(text, "wrong-partition"), metricLine(text, "rate-limited"), metricLine(text, "other")]).toEqual([
      1, 2, 1,
    ]);
  });

  it("logs the first few records a batch skips of each kind one by one and one line for the rest, counting each", async () => {
    const store = new MemoryStore();
    const { options, lines, metrics } = setup(store, async () => delivered);
    const placement = { index: 0, count: 4 };
    const ids = Array.from({ length: 200 }, (_, n) => id(n));
    const elsewhere = ids.filter((eventId) => partitionIndexForKey(eventId, placement.count) !== 0).slice(0, 15);
    const here = ids.find((eventId) => partitionIndexForKey(eventId, placement.count) === 0)!;
    const processor = await PartitionProcessor.open({ ...options, placement });
    await processor.processBatch([
      ...elsewhere.map((eventId, n) => receivedAt(n, fleetTransition(eventId, "Scheduled", vms[0]!, vms))),
      ...Array.from({ length: 15 }, (_, n) => receivedAt(15 + n, Buffer.from("{not json"))),
      receivedAt(30, fleetTransition(here, "Scheduled", vms[0]!, vms, { timeMs: t0 })),
    ]);
    const logged = parsed(lines);
    const oneByOne = (prefix: string, from = logged) =>
      from.filter((l) => l.msg.startsWith(prefix)).map((l) => l.sequenceNumber);
    const first = (from: number) => Array.from({ length: skippedLoggedPerBatch }, (_, n) => from + n);
    expect(oneByOne("dropped a record sent to a partition")).toEqual(first(0));
    expect(oneByOne("skipped an event that is not a valid record")).toEqual(first(15));
    const rest = logged.filter((l) => l.msg.startsWith("skipped more records of this kind"));
    expect(rest.map((l) => [l.outcome, l.count])).toEqual([
      ["wrong-partition", 15 - skippedLoggedPerBatch],
      ["malformed-json", 15 - skippedLoggedPerBatch],
    ]);
    const text = await metrics.registry.metrics();
    expect([
      metricLine(text, "wrong-partition"),
      metricLine(text, "malformed-json"),
      metricLine(text, "folded"),
    ]).toEqual([15, 15, 1]);
    // Exactly as many as are logged one by one: no line for the rest.
    lines.length = 0;
    const malformed = (n: number) => receivedAt(31 + n, Buffer.from("{not json"));
    await processor.processBatch(Array.from({ length: skippedLoggedPerBatch }, (_, n) => malformed(n)));
    expect(oneByOne("skipped an event that is not a valid record", parsed(lines))).toEqual(first(31));
    expect(parsed(lines).filter((l) => l.msg.startsWith("skipped more records of this kind"))).toEqual([]);
  });

  it("leaves an event whose plan throws unnotified, logged and counted, and notifies the others", async () => {
    const store = new MemoryStore();
    const { sent, options, metrics, lines } = setup(store, async () => delivered);
    const poisoned = {
      name: "poisoned",
      targets: ["pd"],
      get vmNamePatterns(): string[] {
        throw new Error("rule broke");
      },
    };
    const processor = await PartitionProcessor.open({
      ...options,
      rules: [{ name: "all", targets: ["chat"], eventTypes: ["Reboot"] }, poisoned as never],
    });
    await processor.processBatch([
      receivedAt(0, fleetTransition(id(20), "Scheduled", vms[0]!, vms, { timeMs: t0, eventType: "Reboot" })),
    ]);
    expect(sent).toEqual([]);
    expect(metricLine(await metrics.registry.metrics(), "unplannable")).toBe(1);
    expect(parsed(lines).find((l) => l.msg.startsWith("could not plan the notifications"))).toMatchObject({
      partitionId: "0",
      eventId: id(20),
      error: { type: "Error", message: "rule broke" },
    });
  });

  it("names the target, event and idempotency key of a claim it takes over", async () => {
    const store = new MemoryStore();
    let now = t0;
    const first = setup(
      store,
      () => new Promise<DeliveryOutcome>(() => undefined),
      () => now,
    );
    void (await PartitionProcessor.open(first.options)).processBatch(wave(1));
    while (first.sent.length < 2) await new Promise((r) => setImmediate(r));
    const next = setup(
      store,
      async () => delivered,
      () => now,
    );
    const owner = await PartitionProcessor.open(next.options);
    now = t0 + 10_000;
    await owner.tick();
    const taken = parsed(next.lines).filter((l) => l.msg.startsWith("re-sending a claim left by an instance"));
    expect(taken.map((l) => [l.target, l.eventId, l.idempotencyKey])).toEqual(
      first.sent.map((s) => [s.target, s.eventId, s.notification.idempotencyKey]),
    );
    const text = await next.metrics.registry.metrics();
    expect(metricValue(text, "sef_fleet_outcomes_saved_total")).toBe(2);
  });
});

describe("PartitionProcessor, what it says and keeps", () => {
  const vms = [vm(0), vm(1)];
  const id = (n: number) => `5a1d0000-0000-4000-8000-${String(n).padStart(12, "0")}`;
  const parsed = (lines: string[]) => lines.map((l) => JSON.parse(l) as Record<string, unknown> & { msg: string });
  /** The same processor options with an info-level logger writing to `lines`. */
  const talkative = (options: ProcessorOptions, lines: string[]): ProcessorOptions => ({
    ...options,
    logger: pino(
      { level: "info" },
      new Writable({ write: (chunk, _enc, done) => (lines.push(String(chunk)), done()) }),
    ),
  });

  it("logs each notification sent, an in-doubt re-send and a dead-letter entry it could not write, with their fields", async () => {
    const answers: DeliveryOutcome[] = [
      { kind: "retry", reason: "timed out after 10000 ms", inDoubt: true },
      delivered,
    ];
    const { options } = setup(new MemoryStore(), async (s) =>
      s.target === "pd" ? answers.shift()! : { kind: "rejected", reason: "HTTP 400" },
    );
    const lines: string[] = [];
    const processor = await PartitionProcessor.open({
      ...talkative(options, lines),
      onDeadLetter: () => Promise.reject(new Error("dead-letter store down")),
    });
    await processor.processBatch([receivedAt(0, fleetTransition(id(1), "Started", vms[0]!, vms, { timeMs: t0 }))]);
    const logged = parsed(lines);
    const key = notificationIdempotencyKey(id(1), "pd", "trigger", 1);
    expect(logged.filter((l) => l.msg === "notification sent")).toEqual([
      expect.objectContaining({ target: "pd", action: "trigger", eventId: id(1), status: "Started", attempt: 2 }),
    ]);
    expect(logged.filter((l) => l.msg.startsWith("re-sending a notification whose unanswered attempt"))).toEqual([
      expect.objectContaining({
        target: "pd",
        action: "trigger",
        eventId: id(1),
        reason: "timed out after 10000 ms",
        attempt: 1,
        idempotencyKey: key,
      }),
    ]);
    expect(logged.filter((l) => l.msg === "notification dead-lettered")).toEqual([
      expect.objectContaining({ target: "chat", action: "trigger", eventId: id(1), reason: "HTTP 400" }),
    ]);
    expect(logged.find((l) => l.msg === "could not write the dead-letter entry")).toMatchObject({
      err: { message: "dead-letter store down" },
    });
  });

  it("leaves a notification claimed, not dead-lettered, when its partition closes while it waits to retry", async () => {
    const store = new MemoryStore();
    const deadLetters: string[] = [];
    const { options, sent } = setup(store, async () => ({
      kind: "retry",
      reason: "HTTP 503",
      retryAfterMs: undefined,
    }));
    const controller = new AbortController();
    const clock = new FakeClock(t0);
    const processor = await PartitionProcessor.open({
      ...options,
      clock: processorClock(clock),
      retry: { minDelayMs: 1000, maxDelayMs: 1000, giveUpAfterMs: 60_000 },
      signal: controller.signal,
      onDeadLetter: async (target) => void deadLetters.push(target),
    });
    const done = processor.processBatch(wave(1));
    while (clock.pendingSleeps < 2) await flushAsync(1); // both sends answered 503 and wait to retry
    controller.abort();
    await done;
    expect(sent).toHaveLength(2);
    expect(deadLetters).toEqual([]);
    expect(store.saves).toBe(1); // the claims: nothing to save for a send cut short
    const { state } = await store.load();
    const states = Object.values(state.notifications[eventKey(0)]!);
    expect(states.map((s) => [s.pending?.action, s.deadLettered])).toEqual([
      ["trigger", null],
      ["trigger", null],
    ]);
  });

  it("treats an event whose first notification is claimed and unanswered as paged: a record cannot relabel it", async () => {
    const store = new MemoryStore();
    const { options, metrics, sent } = setup(store, () => new Promise<DeliveryOutcome>(() => undefined));
    const processor = await PartitionProcessor.open(options);
    await processor.foldBatch([receivedAt(0, fleetTransition(id(2), "Scheduled", vms[0]!, vms, { timeMs: t0 }))]);
    await processor.foldBatch([
      receivedAt(1, fleetTransition(id(2), "Scheduled", vms[1]!, vms, { timeMs: t0, eventType: "Freeze" })),
    ]);
    expect(sent).toHaveLength(2);
    expect((await store.load()).state.events[id(2)]!.eventType).toBe("Reboot");
    const text = await metrics.registry.metrics();
    expect(metricValue(text, "sef_fleet_event_changes_ignored_total", { field: "eventType" })).toBe(1);
  });

  it("lets a later record relabel an event no target was told of, and prunes it after retention", async () => {
    const store = new MemoryStore();
    let now = t0;
    const { options, sent } = setup(
      store,
      async () => delivered,
      () => now,
    );
    const processor = await PartitionProcessor.open({
      ...options,
      rules: [{ name: "freezes", targets: ["pd"], eventTypes: ["Freeze"] }],
    });
    await processor.processBatch([receivedAt(0, fleetTransition(id(5), "Scheduled", vms[0]!, vms, { timeMs: t0 }))]);
    await processor.processBatch([
      receivedAt(1, fleetTransition(id(5), "Scheduled", vms[1]!, vms, { timeMs: t0, eventType: "Redeploy" })),
    ]);
    expect(sent).toEqual([]);
    expect((await store.load()).state.events[id(5)]!.eventType).toBe("Redeploy");
    now = t0 + defaultPartitionBounds.retainOpenMs + 1;
    await processor.tick();
    expect((await store.load()).state.events).toEqual({});
  });

  it("re-plans and prunes in a batch only the events it folded: the others wait for the tick", async () => {
    const store = new MemoryStore();
    let now = t0;
    const rules = [{ name: "pd", targets: ["pd"] }];
    const first = setup(
      store,
      () => new Promise<DeliveryOutcome>(() => undefined),
      () => now,
    );
    // A stopped instance left a claim on event 6 (never answered); event 7 was told and then forgotten by everyone.
    void (await PartitionProcessor.open({ ...first.options, rules })).processBatch([
      receivedAt(0, fleetTransition(id(6), "Scheduled", vms[0]!, vms, { timeMs: t0 })),
    ]);
    while (first.sent.length < 1) await flushAsync(1);
    const next = setup(
      store,
      async () => delivered,
      () => now,
    );
    const owner = await PartitionProcessor.open({ ...next.options, rules });
    await owner.processBatch([receivedAt(1, fleetTransition(id(7), "Scheduled", vms[0]!, vms, { timeMs: t0 }))]);
    now = t0 + defaultPartitionBounds.retainOpenMs + 1; // event 6's claim is stale, event 7 past its retention
    await owner.processBatch([receivedAt(2, fleetTransition(id(8), "Scheduled", vms[0]!, vms, { timeMs: now }))]);
    expect(next.sent.map((s) => s.eventId)).toEqual([id(7), id(8)]);
    expect(Object.keys((await store.load()).state.events).sort()).toEqual([id(6), id(7), id(8)]);
    await owner.tick();
    expect(next.sent.map((s) => s.eventId)).toEqual([id(7), id(8), id(6)]);
    expect(Object.keys((await store.load()).state.events).sort()).toEqual([id(6), id(8)]);
  });

  it("counts records of an event already open in the batch against nothing: the partition's bound is on events", async () => {
    const store = new MemoryStore();
    const { options, metrics } = setup(store, async () => delivered);
    const processor = await PartitionProcessor.open({
      ...options,
      bounds: { ...defaultPartitionBounds, maxEventsPerPartition: 2 },
    });
    await processor.processBatch([
      receivedAt(0, fleetTransition(id(10), "Scheduled", vms[0]!, vms, { timeMs: t0 })),
      receivedAt(1, fleetTransition(id(10), "Scheduled", vms[1]!, vms, { timeMs: t0 })),
      receivedAt(2, fleetTransition(id(11), "Scheduled", vms[0]!, vms, { timeMs: t0 })),
      receivedAt(3, fleetTransition(id(12), "Scheduled", vms[0]!, vms, { timeMs: t0 })),
    ]);
    expect(Object.keys((await store.load()).state.events).sort()).toEqual([id(10), id(11)]);
    expect(metricLine(await metrics.registry.metrics(), "partition-full")).toBe(1);
    expect(processor.activeEvents).toBe(2); // both open
  });

  it("lets a later record relabel an event whose only notification was dead-lettered: nobody was told", async () => {
    const store = new MemoryStore();
    const { options, sent } = setup(store, async () => ({ kind: "rejected", reason: "HTTP 400" }));
    const processor = await PartitionProcessor.open({ ...options, rules: [{ name: "pd", targets: ["pd"] }] });
    await processor.processBatch([receivedAt(0, fleetTransition(id(13), "Scheduled", vms[0]!, vms, { timeMs: t0 }))]);
    await processor.processBatch([
      receivedAt(1, fleetTransition(id(13), "Scheduled", vms[1]!, vms, { timeMs: t0, eventType: "Freeze" })),
    ]);
    expect(sent).toHaveLength(1);
    expect((await store.load()).state.events[id(13)]!.eventType).toBe("Freeze");
  });

  it("changes nothing with an answer that comes after another holder saved the same notification", async () => {
    const store = new MemoryStore();
    let now = t0;
    const rules = [{ name: "pd", targets: ["pd"] }];
    let answerFirst!: () => void;
    const first = setup(
      store,
      () => new Promise<DeliveryOutcome>((resolve) => (answerFirst = () => resolve(delivered))),
      () => now,
    );
    const holder = await PartitionProcessor.open({ ...first.options, rules });
    const firstDone = holder.processBatch([
      receivedAt(0, fleetTransition(id(14), "Scheduled", vms[0]!, vms, { timeMs: t0 })),
    ]);
    while (first.sent.length < 1) await flushAsync(1);
    const next = setup(
      store,
      async () => delivered,
      () => now,
    );
    const owner = await PartitionProcessor.open({ ...next.options, rules });
    now = t0 + 10_000; // the first holder's claim is stale: the owner sends it again and saves its outcome
    await owner.tick();
    expect(next.sent).toHaveLength(1);
    answerFirst(); // its save finds the owner's write, reloads, and finds the notification no longer claimed
    await firstDone;
    expect((await store.load()).state.notifications[id(14)]!.pd).toMatchObject({ pending: null, sent: 1 });
  });

  it("logs a rejected record of an ended event as not a valid record, without calling the event open", async () => {
    const store = new MemoryStore();
    const { options, lines } = setup(store, async () => delivered);
    const processor = await PartitionProcessor.open(options);
    const ended = fleetTransition(id(3), "Completed", vms[0]!, [vms[0]!], { timeMs: t0 });
    await processor.processBatch([
      receivedAt(0, fleetTransition(id(3), "Scheduled", vms[0]!, [vms[0]!], { timeMs: t0 })),
      receivedAt(1, ended),
      receivedAt(2, { ...ended, Resources: "web-vmss_0" }),
    ]);
    const skipped = parsed(lines).filter((l) => l.msg.startsWith("skipped an"));
    expect(skipped.map((l) => [l.msg, l.eventId, l.openEvent])).toEqual([
      ["skipped an event that is not a valid record", id(3), undefined],
    ]);
  });

  it("names what a plan threw when it is not an Error: its type and its text", async () => {
    const { options, lines } = setup(new MemoryStore(), async () => delivered);
    const poisoned = {
      name: "poisoned",
      targets: ["pd"],
      get vmNamePatterns(): string[] {
        throw "rule broke"; // what a plug-in may throw
      },
    };
    const processor = await PartitionProcessor.open({ ...options, rules: [poisoned as never] });
    await processor.processBatch([receivedAt(0, fleetTransition(id(4), "Scheduled", vms[0]!, vms, { timeMs: t0 }))]);
    expect(parsed(lines).find((l) => l.msg.startsWith("could not plan the notifications"))).toMatchObject({
      error: { type: "string", message: "rule broke" },
    });
  });
});
