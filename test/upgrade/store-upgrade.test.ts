// An upgrade over a store written by an older release (store-3172375/: made by commit 3172375's agent, before the
// action_steps table and the emitted_by_end index; README.md there says how). Today's built agent on a copy of that
// data directory: every record the old agent left pending is delivered, once; the sink it parked stays parked and can
// be given up; its action ledger is honoured (finished hooks and the approval are not run again, the hook it was
// running when killed is reported Interrupted once and not rerun); the store ends up with today's schema.
import { afterEach, describe, expect, it } from "vitest";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { startSimulator } from "../../src/testbed/simulator/server.js";
import { Store, schemaVersion } from "../../src/agent/store/store.js";
import type { SefRecord } from "../../src/contract/record.js";
import { readJsonl, runCli, type RunningProcess } from "../helpers/agent-process.js";
import { actionsSettled } from "../helpers/ledger-probe.js";
import { waitFor } from "../helpers/wait.js";
import { waitForMorePolls } from "../helpers/polls.js";
import { fixtureEvents, fixtureHookNames, parkedSinkSpec } from "./fixture.js";

const fixtureDir = join(import.meta.dirname, "store-3172375");
/** A store of schema version 1 (a cursor per sink, before the delivery ledger): make-store-fixture-v1.ts. */
const v1FixtureDir = join(import.meta.dirname, "store-v1-88168cb");
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** What the old agent left in its store, read before today's agent opens it. */
function leftByTheOldAgent(dataDir: string) {
  const db = new DatabaseSync(join(dataDir, "sef.db"));
  try {
    const pending = (sink: string) =>
      (
        db
          .prepare(
            "SELECT o.record_id AS id FROM deliveries d JOIN outbox o ON o.seq = d.seq WHERE d.sink = ? AND d.state = 'pending' ORDER BY d.seq",
          )
          .all(sink) as Array<{ id: string }>
      ).map((r) => r.id);
    const actions = (
      db.prepare("SELECT event_key, name, status FROM actions ORDER BY rowid").all() as Array<{
        event_key: string;
        name: string;
        status: string;
      }>
    ).map((a) => `${a.event_key} ${a.name} ${a.status}`);
    const schema = (
      db
        .prepare(
          "SELECT name FROM sqlite_master WHERE type IN ('table', 'index') AND name NOT LIKE 'sqlite_%' ORDER BY name",
        )
        .all() as Array<{ name: string }>
    ).map((r) => r.name);
    const actionColumns = (
      db.prepare("SELECT name FROM pragma_table_info('actions')").all() as Array<{ name: string }>
    ).map((c) => c.name);
    const meta = (key: string) =>
      (db.prepare("SELECT value FROM meta WHERE key = ?").get(key) as { value: string } | undefined)?.value;
    const version = `${meta("schema_version")}/${meta("schema_migration") ?? "-"}`;
    return {
      webhookPending: pending("webhook"),
      parkedPending: pending(parkedSinkSpec),
      actions,
      schema,
      actionColumns,
      version,
    };
  } finally {
    db.close();
  }
}

interface Receiver {
  readonly url: string;
  /** Every record accepted, in arrival order. */
  readonly records: SefRecord[];
  close(): Promise<void>;
}

async function startReceiver(): Promise<Receiver> {
  const records: SefRecord[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      records.push(...(JSON.parse(Buffer.concat(chunks).toString("utf8")) as SefRecord[]));
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    records,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

async function sef(...args: string[]): Promise<{ code: number | string; stdout: string; stderr: string }> {
  const p: RunningProcess = runCli(args);
  const code = await Promise.race([p.exited, new Promise<string>((r) => setTimeout(() => r("timed out"), 30_000))]);
  await p.stop("SIGKILL");
  return { code, stdout: p.stdout(), stderr: p.stderr() };
}

describe("upgrading over a store an older release wrote", () => {
  it("delivers what it left pending, keeps its parked sink parked (and droppable), honours its action ledger, and migrates the store", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sef-upgrade-"));
    const dataDir = join(dir, "data");
    mkdirSync(dataDir);
    for (const file of ["sef.db", "agent-id"]) copyFileSync(join(fixtureDir, file), join(dataDir, file));
    const old = leftByTheOldAgent(dataDir);
    // The fixture is what its README says: records pending for the webhook and the parked sink, the old schema, and
    // the ledger of two finished hooks, an approval, and a hook running when the old agent was killed.
    expect(old.webhookPending).toHaveLength(7);
    expect(old.parkedPending).toHaveLength(4);
    expect(old.schema).not.toContain("action_steps");
    expect(old.schema).not.toContain("emitted_by_end");
    // Its action ledger has the shape before holds (schema version 2 then, no gated column, no holds table).
    expect(old.version).toBe("2/-");
    expect(old.actionColumns).not.toContain("gated");
    expect(old.schema).not.toContain("action_holds");
    const freeze = fixtureEvents.freeze.EventId.toLowerCase();
    const reboot = fixtureEvents.reboot.EventId.toLowerCase();
    expect(old.actions.sort()).toEqual(
      [
        `${reboot} note succeeded`,
        `${reboot} slow running`,
        `${freeze} approval approved`,
        `${freeze} note succeeded`,
      ].sort(),
    );

    // The simulator still lists the Reboot (Scheduled) as the old agent last saw it; the Freeze is over.
    const sim = await startSimulator({ scenario: "idle" });
    sim.setEvents([fixtureEvents.reboot]);
    const receiver = await startReceiver();
    cleanups.push(
      () => sim.close(),
      () => receiver.close(),
    );
    const hookRuns = join(dir, "hook-runs.log");
    const hook = (name: string, eventTypes: string[]) => ({
      name,
      on: ["Scheduled"],
      eventTypes,
      command: ["/bin/sh", "-c", `echo "$SEF_HOOK_NAME" >> '${hookRuns}'`],
    });
    const configPath = join(dir, "config.json");
    writeFileSync(
      configPath,
      JSON.stringify({
        imdsUrl: sim.url,
        pollIntervalMs: 200,
        dataDir,
        sinks: [`webhook:${receiver.url}`],
        heartbeatIntervalMs: 0,
        metricsPort: 0,
        approval: { mode: "on", rules: [{ eventType: ["Freeze"] }] },
        hooks: [hook(fixtureHookNames.note, ["Freeze", "Reboot"]), hook(fixtureHookNames.slow, ["Reboot"])],
      }),
    );
    const agent = runCli(["run", "--config", configPath]);
    cleanups.push(() => agent.stop("SIGKILL"));
    const webhookPendingNow = () => {
      const db = new DatabaseSync(join(dataDir, "sef.db"), { readOnly: true });
      try {
        return (db.prepare("SELECT pending FROM sinks WHERE sink = 'webhook'").get() as { pending: number }).pending;
      } finally {
        db.close();
      }
    };
    await waitFor(
      "every old pending record delivered, and the interrupted hook reported",
      () =>
        old.webhookPending.every((id) => receiver.records.some((r) => r.RecordId === id)) &&
        receiver.records.some((r) => r.RecordType === "Hook" && r.Outcome === "Interrupted"),
      {
        timeoutMs: 30_000,
        detail: () => agent.stderr().slice(-2000),
      },
    );
    await waitFor(
      "the actions settled and nothing pending for the webhook",
      () => actionsSettled(dataDir) && webhookPendingNow() === 0,
      { timeoutMs: 20_000, detail: () => agent.stderr().slice(-2000) },
    );
    expect(await agent.stop("SIGTERM")).toBe(0);

    // Each old record once, and beside them only the report of the interrupted hook.
    const ids = receiver.records.map((r) => r.RecordId);
    expect(ids.filter((id) => old.webhookPending.includes(id)).sort()).toEqual([...old.webhookPending].sort());
    const fresh = receiver.records.filter((r) => !old.webhookPending.includes(r.RecordId));
    expect(fresh).toHaveLength(1);
    expect(fresh[0]).toMatchObject({
      RecordType: "Hook",
      EventId: fixtureEvents.reboot.EventId,
      EventStatus: "Scheduled",
      Outcome: "Interrupted",
    });
    expect(existsSync(hookRuns) ? readFileSync(hookRuns, "utf8") : "", "a hook run again").toBe("");
    expect(sim.status().approvals).toEqual([]);

    // The parked sink is still parked with its records, and can be given up.
    const status = await sef("outbox", "status", "--data-dir", dataDir, "--json");
    expect(status.code, status.stderr).toBe(0);
    expect((JSON.parse(status.stdout) as { parked: unknown[] }).parked).toEqual([
      { sink: parkedSinkSpec, pending: 4, deadLettered: 0 },
    ]);
    const dropped = await sef("outbox", "drop-sink", parkedSinkSpec, "--data-dir", dataDir);
    expect(dropped.code, dropped.stderr).toBe(0);
    expect(JSON.parse(dropped.stdout)).toMatchObject({ sink: parkedSinkSpec, parked: true, deadLettered: 4 });
    const deadLettered = readJsonl<{ record: { RecordId: string } }>(
      JSON.parse(dropped.stdout).deadLetterFile as string,
    ).map((l) => l.record.RecordId);
    expect(deadLettered.sort()).toEqual([...old.parkedPending].sort());
    const after = await sef("outbox", "status", "--data-dir", dataDir, "--json");
    expect((JSON.parse(after.stdout) as { parked: unknown[] }).parked).toEqual([]);

    // Today's schema, added to the old store: the same as a new store's, and the version that says so. The Reboot's
    // hooks became holds on its approval: the one that had run released (done), the one the old agent was running
    // released as failed once reported interrupted.
    const upgraded = leftByTheOldAgent(dataDir);
    Store.open({ dataDir: join(dir, "fresh"), checkpointInWorker: false }).close();
    const freshStore = leftByTheOldAgent(join(dir, "fresh"));
    expect(upgraded.schema).toEqual(freshStore.schema);
    expect(upgraded.actionColumns).toEqual(freshStore.actionColumns);
    expect(upgraded.version).toBe(`2/${schemaVersion}`); // the layout older agents read stays 2
    const db = new DatabaseSync(join(dataDir, "sef.db"), { readOnly: true });
    try {
      expect(
        db.prepare("SELECT holder, verdict FROM action_holds WHERE event_key = ? ORDER BY holder").all(reboot),
      ).toEqual([
        { holder: `hook:${reboot}:Scheduled:${fixtureHookNames.note}`, verdict: "done" },
        { holder: `hook:${reboot}:Scheduled:${fixtureHookNames.slow}`, verdict: "failed" },
      ]);
    } finally {
      db.close();
    }
  }, 90_000);

  it("over a schema-version-1 store (one cursor per sink): delivers the record it left pending once, and reruns nothing", async () => {
    // store-v1-88168cb/: written by commit 88168cb's agent (make-store-fixture-v1.ts): the Freeze's Scheduled record
    // taken by its webhook (the cursor past it), the Reboot's refused and pending, both events tracked.
    const dir = mkdtempSync(join(tmpdir(), "sef-upgrade-v1-"));
    const dataDir = join(dir, "data");
    mkdirSync(dataDir);
    copyFileSync(join(v1FixtureDir, "sef.db"), join(dataDir, "sef.db"));
    const old = new DatabaseSync(join(dataDir, "sef.db"), { readOnly: true });
    const version = (old.prepare("SELECT value FROM meta WHERE key = 'schema_version'").get() as { value: string })
      .value;
    const cursor = (old.prepare("SELECT seq FROM cursors WHERE sink = 'webhook'").get() as { seq: number }).seq;
    const pending = (
      old.prepare("SELECT record_id AS id FROM outbox WHERE seq > ? ORDER BY seq").all(cursor) as Array<{ id: string }>
    ).map((r) => r.id);
    old.close();
    expect(version).toBe("1");
    expect(pending).toHaveLength(1);

    const sim = await startSimulator({ scenario: "idle" });
    sim.setEvents([fixtureEvents.freeze, fixtureEvents.reboot]); // as the old agent last saw them
    const receiver = await startReceiver();
    cleanups.push(
      () => sim.close(),
      () => receiver.close(),
    );
    const agent = runCli([
      "run",
      "--imds-url",
      sim.url,
      "--poll-interval-ms",
      "200",
      "--data-dir",
      dataDir,
      "--sink",
      `webhook:${receiver.url}`,
      "--heartbeat-interval-ms",
      "0",
      "--metrics-port",
      "0",
    ]);
    cleanups.push(() => agent.stop("SIGKILL"));
    await waitFor("the pending record delivered", () => receiver.records.length >= 1, {
      timeoutMs: 30_000,
      detail: () => agent.stderr().slice(-2000),
    });
    await waitForMorePolls(sim, 3, { detail: () => agent.stderr().slice(-2000) }); // the same events, polled again
    expect(await agent.stop("SIGTERM")).toBe(0);
    // The pending record once; no transition recorded again for events the old agent had recorded.
    expect(receiver.records.map((r) => r.RecordId)).toEqual(pending);
    expect(receiver.records[0]).toMatchObject({
      RecordType: "Transition",
      EventId: fixtureEvents.reboot.EventId,
      EventStatus: "Scheduled",
    });
    const db = new DatabaseSync(join(dataDir, "sef.db"), { readOnly: true });
    try {
      expect(db.prepare("SELECT key, value FROM meta WHERE key LIKE 'schema_%' ORDER BY key").all()).toEqual([
        { key: "schema_migration", value: String(schemaVersion) },
        { key: "schema_version", value: "2" },
      ]);
      expect(db.prepare("SELECT name FROM sqlite_master WHERE name = 'cursors'").get()).toBeUndefined();
      expect(db.prepare("SELECT count(*) AS n FROM deliveries WHERE state = 'pending'").get()).toEqual({ n: 0 });
    } finally {
      db.close();
    }
  }, 90_000);
});
