// The built agent's data-loss paths, each counted and logged: an outbox over its cap behind a sink that is down moves
// its oldest records to the dead-letter file (sef_outbox_evicted_records_total); when that file cannot be written,
// nothing is evicted and /readyz says the store is not writable; and when the outcome of a send cannot be recorded
// (the store is locked), the records stay pending and are sent again once it can — none lost; nor are the transitions
// of a document whose commit failed: a later poll records them.
import { afterEach, describe, expect, it } from "vitest";
import { createServer, type ServerResponse } from "node:http";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AddressInfo } from "node:net";
import { DatabaseSync } from "node:sqlite";
import { startSimulator, type Simulator } from "../../src/testbed/simulator/server.js";
import { logLines, readJsonl, runCli, waitForMetricsUrl, type RunningProcess } from "../helpers/agent-process.js";
import { deliveriesSettled } from "../helpers/ledger-probe.js";
import { waitFor, waitUntil } from "../helpers/wait.js";

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const oneMiB = 1024 * 1024;

async function setUp(
  extra: Record<string, unknown>,
  prepare: (dataDir: string) => void = () => undefined,
): Promise<{ sim: Simulator; agent: RunningProcess; dataDir: string; metricsUrl: string }> {
  const sim = await startSimulator({ scenario: "idle" });
  const dir = mkdtempSync(join(tmpdir(), "sef-loss-"));
  const dataDir = join(dir, "data");
  mkdirSync(dataDir);
  prepare(dataDir);
  const config = join(dir, "config.json");
  writeFileSync(
    config,
    JSON.stringify({
      imdsUrl: sim.url,
      pollIntervalMs: 200,
      dataDir,
      heartbeatIntervalMs: 0,
      metricsPort: 0,
      shutdownFlushMs: 500,
      ...extra,
    }),
  );
  const agent = runCli(["run", "--config", config]);
  cleanups.push(async () => {
    await agent.stop("SIGKILL");
    await sim.close();
  });
  return { sim, agent, dataDir, metricsUrl: await waitForMetricsUrl(agent) };
}

/** Sum of a metric's samples whose labels contain every `labels` pair. */
async function metric(metricsUrl: string, name: string, labels: Record<string, string> = {}): Promise<number> {
  const text = await (await fetch(`${metricsUrl}/metrics`)).text();
  let total = 0;
  for (const line of text.split("\n")) {
    const match = new RegExp(`^${name}(?:\\{([^}]*)\\})? ([0-9.e+]+)$`).exec(line);
    if (match && Object.entries(labels).every(([k, v]) => (match[1] ?? "").includes(`${k}="${v}"`)))
      total += Number(match[2]);
  }
  return total;
}

/**
 * Round after round of ten events with ~45 KB descriptions (each document under IMDS's 1 MiB), each round replacing
 * the last (ten Scheduled, ten Canceled records): ~1 MB of records a round, until `enough()` holds.
 */
async function fillOutbox(sim: Simulator, enough: () => Promise<boolean>): Promise<void> {
  for (let round = 0; round < 12 && !(await enough()); round++) {
    const events = Array.from({ length: 10 }, (_, i) => ({
      EventId: `B16B0000-0000-4000-8000-${String(round * 10 + i).padStart(12, "0")}`,
      EventType: "Reboot",
      Resources: ["WestNO_0"],
      notBeforeInSeconds: 900,
      Description: `round ${round} `.padEnd(45_000, "x"),
    }));
    const polled = sim.requestLog("/metadata/scheduledevents").length;
    sim.setEvents(events);
    // Two polls answered since: the agent has read this round's document (and committed it before polling again).
    await waitFor(`round ${round} read`, () => sim.requestLog("/metadata/scheduledevents").length >= polled + 2);
  }
}

describe("data-loss paths of the built agent", () => {
  it("over its cap behind a sink that is down, the outbox moves its oldest records to the dead-letter file, counted and logged", async () => {
    const { sim, agent, dataDir, metricsUrl } = await setUp({
      sinks: ["webhook:http://127.0.0.1:9/down"],
      maxOutboxBytes: oneMiB,
      webhook: { lingerMs: 0 },
    });
    const evicted = () =>
      metric(metricsUrl, "sef_outbox_evicted_records_total", { sink: "webhook", reason: "over_cap" });
    await fillOutbox(sim, async () => (await evicted()) > 0);
    const count = await evicted();
    expect(count, agent.stderr().slice(-2000)).toBeGreaterThan(0);
    expect(await metric(metricsUrl, "sef_store_dropped_records_total")).toBe(count);
    const lines = readJsonl<{ reason: string; record: { RecordId: string; TimeGenerated: string } }>(
      join(dataDir, "dead-letter", "webhook.jsonl"),
    );
    expect(lines).toHaveLength(count);
    expect(new Set(lines.map((l) => l.reason))).toEqual(
      new Set(["evicted: the outbox was over maxOutboxBytes before this sink took the record"]),
    );
    // The oldest went: no record dead-lettered is younger than one still waiting (the records of one document share
    // their time), and the first round's records went first.
    const db = new DatabaseSync(join(dataDir, "sef.db"), { readOnly: true });
    const waiting = (db.prepare("SELECT json FROM outbox ORDER BY seq").all() as Array<{ json: string }>).map(
      (r) => JSON.parse(r.json) as { TimeGenerated: string },
    );
    db.close();
    expect(waiting.length).toBeGreaterThan(0);
    const evictedTimes = lines.map((l) => Date.parse(l.record.TimeGenerated));
    expect(Math.max(...evictedTimes)).toBeLessThanOrEqual(Math.min(...waiting.map((r) => Date.parse(r.TimeGenerated))));
    expect(evictedTimes).toEqual([...evictedTimes].sort((x, y) => x - y));
    expect(lines[0]!.record).toMatchObject({
      EventId: expect.stringMatching(/^B16B0000-0000-4000-8000-00000000000\d$/),
      EventStatus: "Scheduled",
      Description: expect.stringMatching(/^round 0 /),
    });
    expect(logLines(agent.stderr()).find((l) => String(l.msg).startsWith("outbox over its size cap"))).toMatchObject({
      level: "error",
      deliveries: expect.any(Number),
    });
  }, 90_000);

  it("when the dead-letter file cannot be written, nothing is evicted, the store error is counted and /readyz fails", async () => {
    // A file where the dead-letter directory should be: every dead-letter write fails.
    const { sim, agent, metricsUrl } = await setUp(
      { sinks: ["webhook:http://127.0.0.1:9/down"], maxOutboxBytes: oneMiB, webhook: { lingerMs: 0 } },
      (dataDir) => writeFileSync(join(dataDir, "dead-letter"), "not a directory"),
    );
    await fillOutbox(sim, async () => (await metric(metricsUrl, "sef_store_errors_total")) > 0);
    expect(await metric(metricsUrl, "sef_store_errors_total"), agent.stderr().slice(-2000)).toBeGreaterThan(0);
    expect(await metric(metricsUrl, "sef_outbox_evicted_records_total")).toBe(0);
    expect(
      logLines(agent.stderr()).some((l) =>
        String(l.msg).includes("the dead-letter file cannot be written: nothing evicted; not ready"),
      ),
    ).toBe(true);
    const readyz = await fetch(`${metricsUrl}/readyz`);
    expect(readyz.status).toBe(503);
    expect(JSON.stringify(await readyz.json())).toMatch(/store/);
  }, 90_000);

  it("when the outcome of a send cannot be recorded, the records stay pending and are sent again: none lost", async () => {
    const bodies: string[][] = [];
    const held: ServerResponse[] = [];
    let holding = true;
    const target = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        bodies.push(
          (JSON.parse(Buffer.concat(chunks).toString("utf8")) as Array<{ RecordId: string }>).map((r) => r.RecordId),
        );
        if (holding) held.push(res);
        else res.writeHead(200).end();
      });
    });
    await new Promise<void>((r) => target.listen(0, "127.0.0.1", r));
    cleanups.push(async () => {
      target.closeAllConnections();
      await new Promise((r) => target.close(r));
    });
    const url = `http://127.0.0.1:${(target.address() as AddressInfo).port}/hook`;
    const { sim, agent, dataDir } = await setUp({ sinks: [`webhook:${url}`], webhook: { lingerMs: 0 } });
    sim.setEvents(
      [1, 2, 3].map((i) => ({
        EventId: `5E771E00-0000-4000-8000-00000000000${i}`,
        EventType: "Reboot",
        Resources: ["WestNO_0"],
        notBeforeInSeconds: 900,
      })),
    );
    await waitUntil(() => held.length > 0, 15_000, "the first send, held by the target");
    const firstSent = bodies[0]!;
    // The store is locked (another writer holds it): the 200 arrives, but the agent cannot record it.
    const locker = new DatabaseSync(join(dataDir, "sef.db"));
    locker.exec("BEGIN EXCLUSIVE");
    try {
      holding = false;
      for (const res of held.splice(0)) res.writeHead(200).end();
      const failure = await waitFor(
        "the failed settle in the log",
        () =>
          logLines(agent.stderr()).find((l) => String(l.reason).startsWith("could not record the outcome of a send")),
        {
          detail: () => agent.stderr().slice(-3000),
        },
      );
      expect(failure).toMatchObject({ level: "warn", sink: "webhook", msg: "send failed, will retry" });
    } finally {
      locker.exec("ROLLBACK");
      locker.close();
    }
    await waitUntil(() => deliveriesSettled(dataDir), 20_000, "every record delivered and recorded");
    // Sent again after the lock: each record of the unrecorded send reached the target at least twice, all of them once.
    const sentCounts = new Map<string, number>();
    for (const id of bodies.flat()) sentCounts.set(id, (sentCounts.get(id) ?? 0) + 1);
    for (const id of firstSent) expect(sentCounts.get(id), id).toBeGreaterThanOrEqual(2);
    expect(sentCounts.size).toBeGreaterThanOrEqual(3);
    expect(await agent.stop("SIGTERM")).toBe(0);
  }, 90_000);

  it("when a document cannot be committed (the store is locked), a later poll records its transitions: none lost", async () => {
    const first = "C0FFEE00-0000-4000-8000-000000000001";
    const second = "C0FFEE00-0000-4000-8000-000000000002";
    const event = (EventId: string) => ({
      EventId,
      EventType: "Reboot",
      Resources: ["WestNO_0"],
      notBeforeInSeconds: 900,
    });
    const out = join(mkdtempSync(join(tmpdir(), "sef-loss-out-")), "records.jsonl");
    const { sim, agent, dataDir } = await setUp({ sinks: [`jsonl:${out}`] });
    await waitFor("the first polls", () => sim.requestLog("/metadata/scheduledevents").length >= 2);
    // Another writer holds the store: the document listing the first event is read, and its commit fails.
    const locker = new DatabaseSync(join(dataDir, "sef.db"));
    locker.exec("BEGIN EXCLUSIVE");
    try {
      sim.setEvents([event(first)]);
      await waitFor(
        "a failed commit in the log",
        () => logLines(agent.stderr()).find((l) => l.msg === "could not commit a document to the store; will retry"),
        {
          timeoutMs: 20_000,
          detail: () => agent.stderr().slice(-3000),
        },
      );
    } finally {
      locker.exec("ROLLBACK");
      locker.close();
    }
    // A second event, committed after the lock: once its record is out, the first event's is out too, each once.
    sim.setEvents([event(first), event(second)]);
    const transitions = () =>
      readJsonl<{ EventId?: string; EventStatus?: string }>(out).filter((r) => r.EventId !== undefined);
    await waitFor("the second event's record", () => transitions().some((r) => r.EventId === second), {
      timeoutMs: 20_000,
      detail: () => agent.stderr().slice(-3000),
    });
    expect(
      transitions()
        .map((r) => `${r.EventId}:${r.EventStatus}`)
        .sort(),
    ).toEqual([`${first}:Scheduled`, `${second}:Scheduled`]);
    expect(await agent.stop("SIGTERM")).toBe(0);
  }, 60_000);
});
