// Applying one send's outcomes alone, against a real outbox and dead-letter directory on a fake clock: the sink's
// answer checked, each outcome in the ledger with its next attempt, the dead-letter line before the ledger forgets a
// record, the counters and gauges, and a store that cannot be written turned into a backoff.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { OutcomeApplier, longestHintMs, sendChecked } from "../../src/agent/delivery/apply-outcomes.js";
import { SinkHealth } from "../../src/agent/delivery/sink-health.js";
import { DeadLetterFile } from "../../src/agent/delivery/dead-letter.js";
import { AgentMetrics } from "../../src/agent/observability/metrics.js";
import { silentLogger } from "../../src/agent/observability/logger.js";
import { delivered, rejected, retry, type SendOutcomes, type Sink } from "../../src/agent/sinks/sink.js";
import type { OutboxEntry } from "../../src/agent/delivery/outbox-entry.js";
import { openOutbox, type OpenOutbox } from "../helpers/outbox.js";
import { transitionRecord } from "../helpers/records.js";
import { FakeClock } from "../helpers/fake-clock.js";

let dir: string;
let outbox: OpenOutbox;
let clock: FakeClock;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "sef-apply-"));
  outbox = openOutbox({ dataDir: dir });
  outbox.registerSinks(["s"]);
  clock = new FakeClock(1_000_000);
});
afterEach(() => outbox.close());

const sink = (send: Sink["send"] = async () => []): Sink => ({
  name: "s",
  maxBatchRecords: 10,
  lingerMs: 0,
  send,
  close: async () => undefined,
});

function applier(deadLetters = new DeadLetterFile(join(dir, "dead-letter"))) {
  const metrics = new AgentMetrics();
  const health = new SinkHealth({
    sink: "s",
    clock,
    retryPolicy: { initialDelayMs: 1000, maxDelayMs: 30_000, multiplier: 2 },
    logger: silentLogger(),
    metrics,
    random: () => 1 - 1e-9,
  });
  const outcomes = new OutcomeApplier({
    sink: sink(),
    outbox,
    clock,
    deadLetters,
    health,
    logger: silentLogger(),
    metrics,
  });
  return { outcomes, health, metrics, deadLetters };
}

function add(count: number): OutboxEntry[] {
  return outbox.append(
    Array.from({ length: count }, (_, i) => transitionRecord({ RecordId: `r${i + 1}`, EventId: `E${i + 1}` })),
    clock.now(),
  );
}

const pendingOf = () => outbox.due("s", 100, Number.MAX_SAFE_INTEGER).map((e) => e.record.RecordId);
const dueNow = () => outbox.due("s", 100, clock.monotonicMs()).map((e) => e.record.RecordId);

describe("sendChecked", () => {
  it("passes one outcome per record through; a throw or a wrong count is a retry of every record", async () => {
    const batch = add(2);
    const signal = new AbortController().signal;
    expect(
      await sendChecked(
        sink(async () => [delivered, rejected("no")]),
        batch,
        signal,
      ),
    ).toEqual([delivered, rejected("no")]);
    expect(
      await sendChecked(
        sink(async () => {
          throw new Error("boom");
        }),
        batch,
        signal,
      ),
    ).toEqual([retry("sink threw: boom"), retry("sink threw: boom")]);
    expect(
      await sendChecked(
        sink(async () => [delivered]),
        batch,
        signal,
      ),
    ).toEqual([retry("sink returned 1 outcomes for 2 records"), retry("sink returned 1 outcomes for 2 records")]);
  });
});

describe("longestHintMs", () => {
  it("is the longest hint among the retries, or undefined when none gave one", () => {
    expect(longestHintMs([])).toBeUndefined();
    expect(longestHintMs([retry("a"), retry("b")] as never)).toBeUndefined();
    expect(longestHintMs([retry("a", 0), retry("b")] as never)).toBe(0);
    expect(longestHintMs([retry("a", 500), retry("b"), retry("c", 200)] as never)).toBe(500);
  });
});

describe("OutcomeApplier", () => {
  it("settles a mixed send: delivered gone, rejected dead-lettered with its reason, retries scheduled by hint or backoff", async () => {
    const { outcomes, health, metrics } = applier();
    const batch = add(5);
    const answers: SendOutcomes = [delivered, rejected("  "), retry("busy", 5000), retry("busy", 2000), retry("down")];
    expect(await outcomes.apply(batch, answers)).toBe(7500); // the longest hint, spread by half at most
    expect(pendingOf()).toEqual(["r3", "r4", "r5"]);
    const line = JSON.parse(readFileSync(join(dir, "dead-letter", "s.jsonl"), "utf8")) as Record<string, unknown>;
    expect([line.reason, (line.record as { RecordId: string }).RecordId]).toEqual(["rejected without a reason", "r2"]);
    expect(outbox.deadLetters("s").map((d) => d.reason)).toEqual(["rejected without a reason"]);
    await clock.advance(2999);
    expect(dueNow()).toEqual([]);
    await clock.advance(1);
    expect(dueNow()).toEqual(["r4"]); // its own hint
    await clock.advance(4500);
    expect(dueNow()).toEqual(["r3", "r4", "r5"]); // r5 by the send's backoff
    expect(health.status()).toMatchObject({ consecutiveFailures: 1, lastError: "busy", deadLetteredSinceDelivery: 1 });
    const text = await metrics.render();
    expect(text).toMatch(/^sef_sink_sent_total\{sink="s"\} 1$/m);
    expect(text).toMatch(/^sef_sink_dead_letters_total\{sink="s"\} 1$/m);
    expect(text).toMatch(/^sef_outbox_depth\{sink="s"\} 3$/m);
  });

  it("a send with nothing to retry recovers the sink; nothing due afterwards means no backoff", async () => {
    const { outcomes, health } = applier();
    health.failed("down", undefined);
    expect(await outcomes.apply(add(1), [delivered])).toBeUndefined();
    expect(health.status()).toMatchObject({ consecutiveFailures: 0, lastError: null });
  });

  it("keeps rejected records pending, with the reason, when their dead-letter line cannot be written", async () => {
    writeFileSync(join(dir, "not-a-directory"), "");
    const { outcomes, health } = applier(new DeadLetterFile(join(dir, "not-a-directory")));
    const batch = add(2);
    expect(await outcomes.apply(batch, [rejected("bad"), delivered])).toBe(1000);
    expect(pendingOf()).toEqual(["r1"]);
    expect(health.status().lastError).toMatch(/^could not write the dead-letter file /);
    expect(outbox.deadLetters("s")).toEqual([]);
  });

  it("never throws when the store cannot be written: the records stay pending and a backoff follows", async () => {
    const { outcomes, health } = applier();
    const batch = add(1);
    outbox.opened.database.exec("PRAGMA query_only = ON");
    try {
      expect(await outcomes.apply(batch, [delivered])).toBeGreaterThanOrEqual(1000);
    } finally {
      outbox.opened.database.exec("PRAGMA query_only = OFF");
    }
    expect(health.status().lastError).toMatch(/^could not record the outcome of a send: /);
    expect(pendingOf()).toEqual(["r1"]);
  });
});
