// The conformance suite every plug-in gets by being registered: it loops over the sink registry and the action
// registry. Every plug-in's settings are documented key by key; every sink, made by its factory, takes a record to its
// local peer (the testbed's Event Hubs and Logs Ingestion peers, the notify peer's webhook, a file, a stream) through
// the real ledger and drainer, answers a destination it cannot reach with the contract's outcomes only, and closes
// within the drainer's deadline. Every action, made by its entry from a configuration whose section points at its
// local peer (the IMDS simulator's StartRequests, a real hook script, the testbed's Kubernetes API peer), acts on a
// Scheduled event the agent's own collect, commit and act stages take from the simulator's document, writes its
// record with its Outcome, leaves its mark on the peer, and stops within the agent's deadline. A registered sink or
// action without a peer here (`peers`, `actionPeers`) fails the suite, naming itself.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
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
import { agentConfigSchema, actionSection } from "../../src/agent/config/schema.js";
import { crossFieldProblems } from "../../src/agent/config/rules.js";
import { ImdsClient } from "../../src/agent/imds/client.js";
import type { RecordIdentity, SefRecord } from "../../src/contract/record.js";
import { validateRow } from "../../src/contract/stream-schema.js";
import { systemClock } from "../../src/runtime/clock.js";
import { computeFor, parseScenario, startSimulator, type Simulator } from "../../src/testbed/simulator/index.js";
import { startKubernetesPeer, type KubernetesPeer } from "../../src/testbed/peers/kubernetes/index.js";
import { stopHookTimeoutMs } from "../../src/agent/pipeline/agent.js";
import { openActPath } from "../helpers/act-path.js";
import { waitFor } from "../helpers/wait.js";

const dir = mkdtempSync(join(tmpdir(), "sef-conformance-"));
let eventHubs: EventHubsEmulator;
let logsIngestion: LogsIngestionEmulator;
let notify: NotifyPeer;
let deadPort: number;
const stdoutLines: string[] = [];
// The actions' peers: IMDS (the events, their StartRequests) and a Kubernetes API serving this VM's node.
const scenario = parseScenario(
  { name: "conformance", description: "events set by the test", durationSeconds: 3600, steps: [] },
  "inline",
);
const vmName = scenario.vm.name;
let imds: Simulator;
let imdsClient: ImdsClient;
let vmIdentity: RecordIdentity;
let kubernetes: KubernetesPeer;
const nodeName = "conformance-node";

beforeAll(async () => {
  [eventHubs, logsIngestion, notify, deadPort, imds, kubernetes] = await Promise.all([
    startEventHubsEmulator({ hubName: "sef-records" }),
    startLogsIngestionEmulator(),
    startNotifyPeer(),
    closedPort(),
    startSimulator({ scenario, startOn: "listen" }),
    startKubernetesPeer({
      seed: { nodes: [{ name: nodeName, providerID: `azure://${computeFor(scenario.vm).resourceId}` }] },
    }),
  ]);
  imdsClient = new ImdsClient({ imdsUrl: imds.url, apiVersion: "2020-07-01", clock: systemClock });
  vmIdentity = { ...(await imdsClient.getCompute()), AgentId: "00000000-0000-4000-8000-00000000c0f0" };
});
afterAll(async () => {
  await imdsClient?.close();
  await Promise.all([eventHubs?.close(), logsIngestion?.close(), notify?.close(), imds?.close(), kubernetes?.close()]);
  rmSync(dir, { recursive: true, force: true });
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

/** A record in short, for a failure's message: `Hook:Failed`. */
const typeAndOutcome = (record: SefRecord): string =>
  "Outcome" in record ? `${record.RecordType}:${record.Outcome}` : record.RecordType;

/** How long the agent gives its act stage to stop. */
const actionStopDeadlineMs = stopHookTimeoutMs;
const hookScript = join(dir, "hook.sh");
const hookOutput = join(dir, "hook-ran");
// A real command, run without a shell by the hooks action: it writes the event it was run for.
writeFileSync(hookScript, '#!/bin/sh\nprintf \'%s %s\' "$SEF_EVENT_ID" "$SEF_EVENT_STATUS" > "$1"\n', { mode: 0o755 });

/** How an action reaches its local peer, the record it writes for a Scheduled event, and what the peer shows of it. */
interface ActionPeer {
  /** The action's section, pointing at its peer: parsed by the configuration schema, checked by the entry's rules. */
  readonly section: () => unknown;
  /** The record the action writes first for the suite's event (a Scheduled Reboot naming this VM), and its Outcome. */
  readonly record: { readonly type: SefRecord["RecordType"]; readonly outcome: string };
  /** What the peer shows of the action having acted on the event (undefined or false: nothing yet). */
  readonly effect: (eventId: string) => unknown;
}

/**
 * One recipe per registered action, by section; each acts on the suite's event, a Scheduled Reboot naming this VM with
 * NotBefore 5 minutes ahead. A new action adds its own here (src/agent/actions/README.md, "Adding an action").
 */
const actionPeers: Record<string, ActionPeer> = {
  approval: {
    section: () => ({ mode: "on", rules: [{ eventType: ["Reboot"] }] }),
    record: { type: "Approval", outcome: "Approved" },
    effect: (eventId) => imds.status().approvals.find((a) => a.EventId === eventId && a.outcome === "started"),
  },
  hooks: {
    section: () => [{ name: "conformance", on: ["Scheduled"], command: [hookScript, hookOutput] }],
    record: { type: "Hook", outcome: "Succeeded" },
    effect: (eventId) => existsSync(hookOutput) && readFileSync(hookOutput, "utf8") === `${eventId} Scheduled`,
  },
  kubernetes: {
    section: () => ({ nodeName, kubeconfig: kubernetes.kubeconfigPath, policy: { Reboot: "cordon" } }),
    record: { type: "Kubernetes", outcome: "Cordoned" },
    effect: (eventId) => {
      const node = kubernetes.state.node(nodeName) as
        { spec?: { unschedulable?: boolean; taints?: { value?: string }[] } } | undefined;
      return node?.spec?.unschedulable === true && node.spec.taints?.some((t) => t.value?.includes(eventId));
    },
  },
};

describe.each(actionEntryList.map((entry, index) => [entry.section, entry, index] as const))(
  "action %s",
  (section, entry, index) => {
    const peer = actionPeers[section];

    it("has a local peer in this suite", () => {
      expect(peer, `add "${section}" to the conformance suite's actionPeers`).toBeDefined();
    });

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

    it("acts on a Scheduled transition the agent collects and commits, writes its record, and stops in time", async () => {
      const eventId = `C0F04A11-0000-4000-8000-${String(index + 1).padStart(12, "0")}`;
      imds.setEvents([{ EventId: eventId, EventType: "Reboot", Resources: [vmName], notBeforeInSeconds: 300 }]);
      const config = agentConfigSchema.parse({
        dataDir: mkdtempSync(join(dir, `${section}-`)),
        imdsUrl: imds.url,
        [section]: peer!.section(),
      });
      expect(entry.isOn(actionSection(config, section))).toBe(true);
      expect(crossFieldProblems(config, {})).toEqual([]);
      const path = await openActPath({
        config,
        vm: vmIdentity,
        postStartRequest: (ids, signal) => imdsClient.postStartRequests(ids, signal),
      });
      let stopped: Promise<void> | undefined;
      try {
        path.ingest((await imdsClient.getScheduledEvents()).document);
        // The transition is committed (and its actions planned) before ingest returns; the actions run after.
        expect(path.records()[0]).toMatchObject({
          RecordType: "Transition",
          EventId: eventId,
          EventStatus: "Scheduled",
        });
        const written = await waitFor(
          `the ${section} action's ${peer!.record.type} record`,
          () => {
            const mine = path.records().filter((r) => r.RecordType === peer!.record.type);
            return mine.length > 0 && mine;
          },
          { timeoutMs: 10_000, detail: () => `the outbox holds ${JSON.stringify(path.records().map(typeAndOutcome))}` },
        );
        expect(written[0]).toMatchObject({
          EventId: eventId,
          EventStatus: "Scheduled",
          Outcome: peer!.record.outcome,
          VmName: vmName,
          AgentId: vmIdentity.AgentId,
        });
        for (const record of written) expect(validateRow(record), JSON.stringify(record)).toEqual([]);
        await waitFor(`the ${section} peer to show the action on ${eventId}`, () => peer!.effect(eventId), {
          timeoutMs: 5_000,
        });
        const stopping = path.act.stop();
        stopped = stopping;
        expect(await within(stopping, actionStopDeadlineMs)).toBeLessThan(actionStopDeadlineMs);
      } finally {
        // Stopped (or, after a failure above, stopping) before the store closes, bounded.
        await within(stopped ?? path.act.stop(), 5_000).catch(() => undefined);
        path.close();
      }
    });
  },
);
