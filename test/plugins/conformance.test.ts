// The conformance suite every plug-in gets by being registered: it loops over the sink registry and the action
// registry. Every plug-in's settings are documented key by key; every sink, made by its factory, takes a record to its
// local peer (the testbed's Event Hubs and Logs Ingestion peers, the notify peer's webhook, a file, a stream) through
// the real ledger and drainer, answers a destination it cannot reach with the contract's outcomes only, and closes
// within the drainer's deadline. A registered sink without a peer here fails the suite, naming itself.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { settingEntries } from "../../infra/docs/config-reference.js";
import { sinkFactories } from "../../src/agent/sinks/registry.js";
import { actionEntryList } from "../../src/agent/actions/registry.js";
import type { RecordOutcome, Sink, SinkFactory } from "../../src/agent/sinks/sink.js";
import { sinkCloseTimeoutMs } from "../../src/agent/delivery/drainer.js";
import { LogAnalyticsSink } from "../../src/agent/sinks/loganalytics/sink.js";
import type { LogAnalyticsSettings } from "../../src/agent/sinks/loganalytics/settings.js";
import { StdoutSink } from "../../src/agent/sinks/stdout/sink.js";
import { silentLogger } from "../../src/agent/observability/logger.js";
import { startEventHubsEmulator, type EventHubsEmulator } from "../../src/testbed/peers/eventhubs/server.js";
import {
  startLogsIngestionEmulator,
  type LogsIngestionEmulator,
} from "../../src/testbed/peers/logs-ingestion/index.js";
import { startNotifyPeer, type NotifyPeer } from "../../src/testbed/peers/notify/server.js";
import { drainThroughLedger } from "../helpers/ledger-drain.js";
import { transitionRecord } from "../helpers/records.js";
import { localTokenCredential } from "../loganalytics/helpers.js";

const dir = mkdtempSync(join(tmpdir(), "sef-conformance-"));
let eventHubs: EventHubsEmulator;
let logsIngestion: LogsIngestionEmulator;
let notify: NotifyPeer;
let deadPort: number;
const stdoutLines: string[] = [];

beforeAll(async () => {
  [eventHubs, logsIngestion, notify, deadPort] = await Promise.all([
    startEventHubsEmulator({ hubName: "sef-records" }),
    startLogsIngestionEmulator(),
    startNotifyPeer(),
    closedPort(),
  ]);
});
afterAll(async () => {
  await Promise.all([eventHubs?.close(), logsIngestion?.close(), notify?.close()]);
});

/** A loopback port nothing listens on (bound, then closed): connections to it are refused. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** How a sink reaches its local peer, how it is pointed at nothing, and what the peer holds. */
interface SinkPeer {
  /** The `--sink` argument and the section's input (parsed by the sink's own schema). */
  readonly reachable: () => { argument?: string; section: Record<string, unknown> };
  readonly unreachable: () => { argument?: string; section: Record<string, unknown> };
  /** The RecordIds the peer holds now. */
  readonly received: () => string[];
  /** Makes the sink when its factory needs what only a test can give (a token credential); the factory otherwise. */
  readonly make?: (settings: unknown, argument: string | undefined) => Sink;
}

const jsonlFile = join(dir, "records.jsonl");
const notAFile = join(dir, "plain-file");
writeFileSync(notAFile, "");

const peers: Record<string, SinkPeer> = {
  eventhubs: {
    reachable: () => ({ section: { connectionString: eventHubs.connectionString, tryTimeoutMs: 5000 } }),
    unreachable: () => ({
      section: {
        connectionString: eventHubs.connectionString.replace(/:\d+;/, `:${deadPort};`),
        tryTimeoutMs: 1000,
      },
    }),
    received: () =>
      eventHubs.events().map((e) => (JSON.parse(e.body?.toString("utf8") ?? "{}") as { RecordId: string }).RecordId),
  },
  jsonl: {
    reachable: () => ({ argument: jsonlFile, section: {} }),
    // A directory that cannot be made: its parent is a plain file.
    unreachable: () => ({ argument: join(notAFile, "records.jsonl"), section: {} }),
    received: () =>
      readFileSync(jsonlFile, "utf8")
        .split("\n")
        .filter(Boolean)
        .map((line) => (JSON.parse(line) as { RecordId: string }).RecordId),
  },
  loganalytics: {
    reachable: () => ({
      section: { endpoint: logsIngestion.endpoint, ruleId: logsIngestion.ruleId, caCertFile: logsIngestion.caCertPath },
    }),
    unreachable: () => ({
      section: { endpoint: `https://127.0.0.1:${deadPort}`, ruleId: logsIngestion.ruleId, requestTimeoutMs: 2000 },
    }),
    received: () => logsIngestion.rows().map((row) => String(row.RecordId)),
    make: (settings) =>
      new LogAnalyticsSink({
        settings: settings as LogAnalyticsSettings,
        logger: silentLogger(),
        credential: localTokenCredential(),
      }),
  },
  stdout: {
    reachable: () => ({ section: {} }),
    unreachable: () => ({ section: {} }),
    received: () => stdoutLines.map((line) => (JSON.parse(line) as { RecordId: string }).RecordId),
    // The process's stdout is vitest's: the sink writes to a stream of the test's, one that fails when told to.
    make: (settings, argument) =>
      argument === "broken"
        ? new StdoutSink(failingStream(), settings as { maxBatchRecords: number; lingerMs: number })
        : new StdoutSink(collectingStream(), settings as { maxBatchRecords: number; lingerMs: number }),
  },
  webhook: {
    reachable: () => ({ argument: `${notify.url}/hook/conformance`, section: { timeoutMs: 5000 } }),
    unreachable: () => ({ argument: `http://127.0.0.1:${deadPort}/hook`, section: { timeoutMs: 2000 } }),
    received: () =>
      notify.requests("webhook").flatMap((r) => (r.body as { RecordId: string }[]).map((record) => record.RecordId)),
  },
};

function collectingStream(): Writable {
  return new Writable({
    write(chunk: Buffer, _encoding, done) {
      stdoutLines.push(...chunk.toString("utf8").split("\n").filter(Boolean));
      done();
    },
  });
}

function failingStream(): Writable {
  const stream = new Writable({
    write: (_chunk, _encoding, done) => done(Object.assign(new Error("EPIPE"), { code: "EPIPE" })),
  });
  // The write's callback carries the error to the sink; the stream's own 'error' event has no one else to tell.
  stream.on("error", () => undefined);
  return stream;
}

async function makeSink(
  factory: SinkFactory<unknown>,
  peer: SinkPeer,
  target: { argument?: string; section: Record<string, unknown> },
): Promise<Sink> {
  const settings = factory.settingsSchema.parse(target.section);
  const argument = target.argument;
  if (peer.make) return peer.make(settings, argument);
  const context = { logger: silentLogger(), dataDir: dir, agentVersion: "0.0.0-conformance" };
  return factory.create({ argument, settings, context });
}

/** Whether `outcome` is one of the contract's kinds with the fields the contract gives that kind, and nothing else. */
function isContractOutcome(outcome: RecordOutcome): boolean {
  const keys = Object.keys(outcome).sort();
  switch (outcome.kind) {
    case "delivered":
      return keys.join() === "kind";
    case "retry":
      return (
        outcome.reason.length > 0 &&
        (outcome.afterMs === undefined || outcome.afterMs >= 0) &&
        keys.every((k) => ["kind", "reason", "afterMs", "needsOperator"].includes(k))
      );
    case "rejected":
      return outcome.reason.length > 0 && keys.every((k) => ["kind", "reason", "tooLarge"].includes(k));
    default:
      return false;
  }
}

/** Resolves with how long `promise` took, or rejects when it takes longer than `limitMs`. */
async function within(promise: Promise<unknown>, limitMs: number): Promise<number> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    promise,
    new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`not settled in ${limitMs} ms`)), limitMs))),
  ]).finally(() => clearTimeout(timer));
  return performance.now() - started;
}

const entries = settingEntries();

/** The reference entries of a plug-in's section (its keys, depth first). */
function sectionEntries(section: string) {
  return entries.filter(
    (e) => e.path === section || e.path.startsWith(`${section}.`) || e.path.startsWith(`${section}[]`),
  );
}

describe.each(sinkFactories.map((factory) => [factory.section, factory] as const))("sink %s", (section, factory) => {
  const peer = peers[section];

  it("has a local peer in this suite", () => {
    expect(peer, `add "${section}" to the conformance suite's peers`).toBeDefined();
  });

  it("documents every key of its section, and embeds the shared delivery settings", () => {
    const keys = sectionEntries(section);
    for (const entry of keys) expect(entry.description, entry.path).not.toBe("");
    expect(keys.map((e) => e.path)).toEqual(
      expect.arrayContaining([`${section}.maxBatchRecords`, `${section}.lingerMs`, `${section}.retry`]),
    );
  });

  it("takes a record to its peer through the ledger and the drainer, and closes within the drainer's deadline", async () => {
    const sink = await makeSink(factory, peer!, peer!.reachable());
    const record = transitionRecord({ EventId: `00000000-0000-4000-8000-${section.padStart(12, "0").slice(-12)}` });
    const drained = await drainThroughLedger(sink, [{ seq: 1, record, json: JSON.stringify(record) }], {
      maxAttempts: 3,
    });
    expect(drained.results.flat()).toEqual([{ kind: "delivered" }]);
    expect(peer!.received()).toContain(record.RecordId);
    expect(await within(sink.close(), sinkCloseTimeoutMs)).toBeLessThan(sinkCloseTimeoutMs);
  });

  it("answers a destination it cannot reach with the contract's outcomes, one per record, and still closes in time", async () => {
    const sink = await makeSink(
      factory,
      peer!,
      section === "stdout" ? { argument: "broken", section: {} } : peer!.unreachable(),
    );
    const records = [1, 2].map((n) => transitionRecord({ DocumentIncarnation: n, RecordId: `unreachable-${n}` }));
    const batch = records.map((record, i) => ({ seq: i + 1, record, json: JSON.stringify(record) }));
    const outcomes = await sink.send(batch, new AbortController().signal);
    expect(outcomes).toHaveLength(batch.length);
    for (const outcome of outcomes) {
      expect(isContractOutcome(outcome), JSON.stringify(outcome)).toBe(true);
      expect(outcome.kind).not.toBe("delivered");
    }
    expect(await within(sink.close(), sinkCloseTimeoutMs)).toBeLessThan(sinkCloseTimeoutMs);
  });
});

describe.each(actionEntryList.map((entry) => [entry.section, entry] as const))("action %s", (section, entry) => {
  it("documents every key of its section", () => {
    const keys = sectionEntries(section);
    expect(keys.length).toBeGreaterThan(0);
    for (const key of keys) expect(key.description, key.path).not.toBe("");
  });

  it("is off when its section is absent, and its rules pass its defaults", () => {
    const settings = entry.settingsSchema.parse(undefined);
    expect(entry.isOn(settings)).toBe(false);
    expect(entry.rules?.({ settings, inUse: false, argument: undefined, env: {} }) ?? []).toEqual([]);
  });

  it("has a kind of its own among the actions", () => {
    expect(actionEntryList.filter((other) => other.kind === entry.kind).map((other) => other.section)).toEqual([
      section,
    ]);
  });
});
