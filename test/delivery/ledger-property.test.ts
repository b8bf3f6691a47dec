// Property test of the delivery ledger (fast-check): random interleavings of sends, per-record outcomes, partial
// accepts, failed sends and sends whose outcome is lost (the agent stops mid-send and restarts on the same store),
// against a toy sink defined here and the real jsonl, webhook (loopback HTTP server), Event Hubs (local AMQP peer) and
// Log Analytics (local Logs Ingestion peer) sinks, through the real drainer and store. Every run shows: no record lost, none handed to a sink again after it acknowledged it (only a send
// whose outcome was lost may repeat), dead-letters only with a reason.
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { mkdtempSync, readFileSync, existsSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openOutbox, type OpenOutbox } from "../helpers/outbox.js";
import { Drainer } from "../../src/agent/delivery/drainer.js";
import { DeadLetterFile } from "../../src/agent/delivery/dead-letter.js";
import { AgentMetrics } from "../../src/agent/observability/metrics.js";
import { silentLogger } from "../../src/agent/observability/logger.js";
import { JsonlSink } from "../../src/agent/sinks/jsonl/sink.js";
import { createWebhookSink } from "../../src/agent/sinks/webhook/sink.js";
import { webhookSettingsSchema } from "../../src/agent/sinks/webhook/settings.js";
import {
  allOutcomes,
  delivered,
  rejected,
  retry,
  type RecordOutcome,
  type SendOutcomes,
  type Sink,
} from "../../src/agent/sinks/sink.js";
import type { OutboxEntry } from "../../src/agent/delivery/outbox-entry.js";
import type { HeartbeatRecord } from "../../src/contract/record.js";
import { instantClock } from "../helpers/fake-clock.js";
import { propertyParams } from "../helpers/seed.js";
import { heartbeatRecord } from "../helpers/records.js";
import { randomBytes } from "node:crypto";
import { startEventHubsEmulator } from "../../src/testbed/peers/eventhubs/server.js";
import { createEventHubsSink, eventHubsSettingsSchema } from "../../src/agent/sinks/eventhubs/index.js";
import { startLogsIngestionEmulator } from "../../src/testbed/peers/logs-ingestion/index.js";
import type { Fault } from "../../src/testbed/peers/logs-ingestion/faults.js";
import { LogAnalyticsSink, RulePauses, logAnalyticsSettingsSchema } from "../../src/agent/sinks/loganalytics/index.js";
import { localTokenCredential } from "../loganalytics/helpers.js";

/** Records of about 600 bytes of JSON, so that a webhook request of 2 KiB carries three of them. */
const record = (i: number, tag = "rec"): HeartbeatRecord => heartbeatRecord(i, { tag, detail: "d".repeat(400) });

/** What the harness does around one send of the real sink. */
type Step = "send" | "fail" | "lost";

/**
 * Wraps a sink: `fail` answers retry without sending; `lost` sends, then never answers until the agent stops (the
 * outcome is lost: the harness restarts on the same store). It checks that no record it saw acknowledged comes back.
 */
class ChaosSink implements Sink {
  readonly lingerMs = 0;
  readonly acknowledged = new Set<string>();
  readonly inLostSends = new Set<string>();
  readonly reportedRejected = new Set<string>();
  readonly violations: string[] = [];
  restartRequested = false;
  sends = 0;
  constructor(
    private readonly inner: Sink,
    private readonly steps: readonly Step[],
  ) {}
  get name(): string {
    return this.inner.name;
  }
  get maxBatchRecords(): number {
    return this.inner.maxBatchRecords;
  }
  async send(batch: readonly OutboxEntry[], signal: AbortSignal): Promise<SendOutcomes> {
    const step = this.steps[this.sends++] ?? "send";
    for (const e of batch)
      if (this.acknowledged.has(e.record.RecordId))
        this.violations.push(`${e.record.RecordId} handed again after it was acknowledged`);
    if (step === "fail") return allOutcomes(batch, retry("injected: connection refused"));
    const outcomes = await this.inner.send(batch, signal);
    if (step === "lost") {
      for (const e of batch) this.inLostSends.add(e.record.RecordId);
      this.restartRequested = true;
      await new Promise<void>((resolve) =>
        signal.aborted ? resolve() : signal.addEventListener("abort", () => resolve(), { once: true }),
      );
      return allOutcomes(batch, retry("aborted: the agent stopped"));
    }
    batch.forEach((e, i) => {
      const o = outcomes[i]!;
      if (o.kind === "delivered") this.acknowledged.add(e.record.RecordId);
      if (o.kind === "rejected") {
        this.reportedRejected.add(e.record.RecordId);
        if (o.reason.trim() === "") this.violations.push(`${e.record.RecordId} rejected without a reason`);
      }
    });
    return outcomes;
  }
  async close(): Promise<void> {}
}

/** Appends `count` records, drains them through the real drainer, restarting on the same store after each lost send. */
async function drainWithRestarts(
  sink: ChaosSink,
  count: number,
  tag = "rec",
  clock = instantClock(),
): Promise<{ deadLetters: Map<string, string> }> {
  const dir = mkdtempSync(join(tmpdir(), "sef-ledger-prop-"));
  const open = (): OpenOutbox => openOutbox({ dataDir: dir, maxOutboxBytes: 1 << 30 });
  const start = (store: OpenOutbox): Drainer => {
    const drainer = new Drainer({
      sink,
      outbox: store,
      clock,
      retryPolicy: { initialDelayMs: 10, maxDelayMs: 1000, multiplier: 2 },
      deadLetters: new DeadLetterFile(join(dir, "dead-letter")),
      logger: silentLogger(),
      metrics: new AgentMetrics(),
      random: () => 0.5,
    });
    drainer.start();
    drainer.notify(true);
    return drainer;
  };
  let store = open();
  store.registerSinks([sink.name]);
  // Records arrive in a few commits, as documents would.
  for (let i = 0; i < count; i += 4)
    store.append(
      Array.from({ length: Math.min(4, count - i) }, (_, k) => record(i + k, tag)),
      clock.now(),
    );
  let drainer = start(store);
  const deadline = Date.now() + 10_000;
  while (store.depth(sink.name).records > 0 && sink.violations.length === 0) {
    if (Date.now() > deadline || sink.sends > 200)
      throw new Error(`not drained: ${store.depth(sink.name).records} pending after ${sink.sends} sends`);
    if (sink.restartRequested) {
      sink.restartRequested = false;
      await drainer.stop(clock.monotonicMs());
      store.close();
      store = open();
      drainer = start(store);
    }
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  await drainer.stop(clock.monotonicMs());
  const deadLetters = new Map(
    store.deadLetters(sink.name).map((d) => [JSON.parse(d.json).RecordId as string, d.reason]),
  );
  store.close();
  return { deadLetters };
}

/** The three properties, given how many times each record reached the destination as accepted. */
function expectLedgerProperties(
  sink: ChaosSink,
  count: number,
  acceptedAtDestination: Map<string, number>,
  deadLetters: Map<string, string>,
  tag = "rec",
): void {
  expect(sink.violations).toEqual([]);
  for (let i = 0; i < count; i++) {
    const id = `${tag}-${i}`;
    const accepted = acceptedAtDestination.get(id) ?? 0;
    const reason = deadLetters.get(id);
    // No record lost: delivered, or dead-lettered with a reason.
    expect(accepted > 0 || reason !== undefined, `${id} lost`).toBe(true);
    // Dead-letters only with a reason the sink gave.
    if (reason !== undefined) {
      expect(reason.trim(), id).not.toBe("");
      expect(sink.reportedRejected.has(id), `${id} dead-lettered without a rejection`).toBe(true);
    }
    // Only a send whose outcome was lost may repeat a record.
    if (!sink.inLostSends.has(id)) expect(accepted, `${id} accepted ${accepted} times`).toBeLessThanOrEqual(1);
  }
}

const steps = fc.array(fc.constantFrom<Step>("send", "send", "send", "fail", "lost"), { maxLength: 12 });

describe("delivery ledger properties", () => {
  it("toy sink with random per-record outcomes", async () => {
    const outcome = fc.oneof(
      fc.constant<RecordOutcome>(delivered),
      fc.constant<RecordOutcome>(retry("busy")),
      fc.integer({ min: 0, max: 200 }).map((ms) => retry("throttled", ms)),
      fc.constant<RecordOutcome>(rejected("refused: bad record")),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 14 }),
        steps,
        fc.array(outcome, { minLength: 1, maxLength: 40 }),
        async (count, plan, script) => {
          const destination = new Map<string, number>();
          let next = 0;
          const toy: Sink = {
            name: "toy",
            maxBatchRecords: 5,
            lingerMs: 0,
            send: async (batch) =>
              batch.map((e) => {
                // The script runs out after a while: then the toy destination takes everything.
                const o = script[next++] ?? delivered;
                if (o.kind === "delivered")
                  destination.set(e.record.RecordId, (destination.get(e.record.RecordId) ?? 0) + 1);
                return o;
              }),
            close: async () => {},
          };
          const sink = new ChaosSink(toy, plan);
          const { deadLetters } = await drainWithRestarts(sink, count);
          expectLedgerProperties(sink, count, destination, deadLetters);
        },
      ),
      propertyParams(7001, 24),
    );
  });

  it("jsonl sink with failed and lost sends", async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 14 }), steps, async (count, plan) => {
        const path = join(mkdtempSync(join(tmpdir(), "sef-ledger-jsonl-")), "out.jsonl");
        const sink = new ChaosSink(new JsonlSink(path), plan);
        const { deadLetters } = await drainWithRestarts(sink, count);
        const lines = existsSync(path) ? readFileSync(path, "utf8").trim().split("\n").filter(Boolean) : [];
        const destination = new Map<string, number>();
        for (const line of lines) {
          const id = (JSON.parse(line) as { RecordId: string }).RecordId;
          destination.set(id, (destination.get(id) ?? 0) + 1);
        }
        expectLedgerProperties(sink, count, destination, deadLetters);
        expect(deadLetters.size).toBe(0);
      }),
      propertyParams(7005, 12),
    );
  });

  it("webhook sink with random answers per request (partial accepts, 413 splits, 400s), failed and lost sends", async () => {
    const answer = fc.constantFrom(200, 200, 200, 500, 503, 400, 413);
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 14 }),
        steps,
        fc.array(answer, { maxLength: 30 }),
        async (count, plan, answers) => {
          const destination = new Map<string, number>();
          let request = 0;
          const server: Server = createServer((req, res) => {
            const chunks: Buffer[] = [];
            req.on("data", (c: Buffer) => chunks.push(c));
            req.on("end", () => {
              const status = answers[request++] ?? 200;
              if (status === 200) {
                for (const r of JSON.parse(Buffer.concat(chunks).toString()) as Array<{ RecordId: string }>)
                  destination.set(r.RecordId, (destination.get(r.RecordId) ?? 0) + 1);
              }
              res
                .writeHead(status, status === 503 ? { "retry-after": "0" } : {})
                .end(status === 200 ? "{}" : `injected ${status}`);
            });
          });
          await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
          const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
          const webhook = createWebhookSink({
            argument: url,
            // Small requests: one drain batch of 6 goes out as several requests, so partial accepts happen.
            settings: webhookSettingsSchema.parse({ maxBatchRecords: 6, maxBatchBytes: 2048, timeoutMs: 2000 }),
            logger: silentLogger(),
            agentVersion: "t",
            env: {},
          });
          try {
            const sink = new ChaosSink(webhook, plan);
            const { deadLetters } = await drainWithRestarts(sink, count);
            expectLedgerProperties(sink, count, destination, deadLetters);
            // A record the endpoint refused was never accepted before (no lost sends there): dead-letters are honest.
            for (const id of deadLetters.keys())
              if (!sink.inLostSends.has(id)) expect(destination.get(id) ?? 0, id).toBe(0);
          } finally {
            await webhook.close();
            await new Promise<void>((resolve) => server.close(() => resolve()));
          }
        },
      ),
      propertyParams(7002, 12),
    );
  });

  it("Event Hubs sink against the local AMQP peer refusing sends at random (server busy), with failed and lost sends", async () => {
    const fault = fc.constantFrom<"ok" | "server-busy">("ok", "ok", "server-busy");
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 14 }),
        steps,
        fc.array(fault, { maxLength: 10 }),
        async (count, plan, faults) => {
          const emulator = await startEventHubsEmulator({ hubName: "sef-ledger-prop", partitionCount: 2 });
          const eventHubs = createEventHubsSink(
            eventHubsSettingsSchema.parse({
              connectionString: emulator.connectionString,
              maxRetries: 0,
              tryTimeoutMs: 5000,
              lingerMs: 0,
            }),
            { logger: silentLogger() },
            {},
          );
          try {
            emulator.faults.planSends(faults);
            const sink = new ChaosSink(eventHubs, plan);
            const { deadLetters } = await drainWithRestarts(sink, count);
            const destination = new Map<string, number>();
            for (const e of emulator.events()) destination.set(e.messageId!, (destination.get(e.messageId!) ?? 0) + 1);
            expectLedgerProperties(sink, count, destination, deadLetters);
            expect(deadLetters.size).toBe(0);
          } finally {
            await eventHubs.close();
            await emulator.close();
          }
        },
      ),
      propertyParams(7003, 6),
    );
  });

  it("Log Analytics sink against the local Logs Ingestion peer answering 500/503/400 at random, with failed and lost sends", async () => {
    const peer = await startLogsIngestionEmulator();
    const answer = fc.constantFrom<Fault | undefined>(
      undefined,
      undefined,
      { status: 500 },
      { status: 503 },
      { status: 400 },
    );
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: 14 }),
          steps,
          fc.array(answer, { maxLength: 10 }),
          async (count, plan, answers) => {
            peer.faults.clear();
            for (const a of answers) peer.faults.failNext(1, a ?? {});
            const tag = `la-${randomBytes(4).toString("hex")}`;
            const clock = instantClock();
            const logAnalytics = new LogAnalyticsSink({
              // Requests of three rows: a batch goes out as several requests, so partial accepts happen.
              settings: logAnalyticsSettingsSchema.parse({
                endpoint: peer.endpoint,
                ruleId: peer.ruleId,
                caCertFile: peer.caCertPath,
                maxRequestBytes: 3 * JSON.stringify(record(0, tag)).length + 4,
                maxConcurrentRequests: 1,
                lingerMs: 0,
              }),
              logger: silentLogger(),
              credential: localTokenCredential(),
              pauses: new RulePauses(),
              clock,
            });
            try {
              const sink = new ChaosSink(logAnalytics, plan);
              const { deadLetters } = await drainWithRestarts(sink, count, tag, clock);
              const destination = new Map<string, number>();
              for (const row of peer.rows()) {
                const id = String(row.RecordId);
                if (id.startsWith(`${tag}-`)) destination.set(id, (destination.get(id) ?? 0) + 1);
              }
              expectLedgerProperties(sink, count, destination, deadLetters, tag);
              for (const id of deadLetters.keys())
                if (!sink.inLostSends.has(id)) expect(destination.get(id) ?? 0, id).toBe(0);
            } finally {
              await logAnalytics.close();
            }
          },
        ),
        propertyParams(7004, 6),
      );
    } finally {
      await peer.close();
    }
  });
});
