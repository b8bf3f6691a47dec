// `sef outbox status`, `sef dead-letter list`, `replay` and `purge` as child processes of the built CLI, on a store
// prepared here: read-only commands beside a running agent, replay and purge refused while one holds the data directory.
import { describe, expect, it } from "vitest";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openOutbox, openOutboxReadOnly } from "../helpers/outbox.js";
import { heartbeatRecord } from "../helpers/records.js";
import { acquire as acquireDataDir } from "../../src/agent/store/data-dir-lock.js";
import { runCli } from "../helpers/agent-process.js";

const record = (i: number) => heartbeatRecord(i);

async function sef(...args: string[]): Promise<{ code: number | string; stdout: string; stderr: string }> {
  const p = runCli(args);
  const code = await p.exited;
  return { code, stdout: p.stdout(), stderr: p.stderr() };
}

describe("ledger commands", () => {
  it("show status and dead-letters read-only, and replay them once no agent holds the data directory", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "sef-ledger-cli-"));
    const store = openOutbox({ dataDir, maxOutboxBytes: 1 << 30 });
    store.registerSinks(["webhook", "stdout"]);
    store.append([record(1), record(2), record(3)], Date.now() - 60_000);
    store.applyOutcomes(
      "stdout",
      [1, 2, 3].map((seq) => ({ seq, kind: "delivered" as const })),
      Date.now(),
    );
    store.applyOutcomes(
      "webhook",
      [
        { seq: 1, kind: "rejected", reason: "HTTP 400: bad" },
        { seq: 2, kind: "delivered" },
      ],
      Date.now(),
    );
    const agentLock = acquireDataDir(dataDir); // this test process plays the running agent: it holds the data directory

    const status = await sef("outbox", "status", "--data-dir", dataDir, "--json");
    expect(status.code, status.stderr).toBe(0);
    const parsed = JSON.parse(status.stdout) as { sinks: Array<Record<string, unknown>> };
    expect(parsed.sinks).toEqual([
      {
        sink: "stdout",
        pending: 0,
        oldestPendingAgeSeconds: null,
        deadLettered: 0,
        delivered: 3,
        lastDelivery: expect.any(String),
      },
      {
        sink: "webhook",
        pending: 1,
        oldestPendingAgeSeconds: expect.any(Number),
        deadLettered: 1,
        delivered: 1,
        lastDelivery: expect.any(String),
      },
    ]);
    expect(parsed.sinks[1]!["oldestPendingAgeSeconds"]).toBeGreaterThanOrEqual(59);
    const table = await sef("outbox", "status", "--data-dir", dataDir);
    expect(table.stdout).toMatch(/^SINK\s+PENDING\s+OLDEST_AGE_S\s+DEAD_LETTERED/m);

    const list = await sef("dead-letter", "list", "--data-dir", dataDir, "--sink", "webhook");
    expect(list.code, list.stderr).toBe(0);
    expect(
      list.stdout
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l)),
    ).toEqual([
      expect.objectContaining({
        sink: "webhook",
        seq: 1,
        recordId: "rid-1",
        reason: "HTTP 400: bad",
        record: expect.objectContaining({ RecordId: "rid-1" }),
      }),
    ]);

    const refused = await sef("dead-letter", "replay", "--data-dir", dataDir);
    expect(refused.code).toBe(75);
    expect(refused.stderr).toMatch(
      new RegExp(`refusing to replay while an agent holds .*in use by another sef \\(pid ${process.pid}\\)`),
    );
    expect(store.deadLetters()).toHaveLength(1);

    agentLock.release();
    store.close();
    const replayed = await sef("dead-letter", "replay", "--data-dir", dataDir, "--reason", "400");
    expect(replayed.code, replayed.stderr).toBe(0);
    expect(JSON.parse(replayed.stdout)).toEqual({ replayed: 1, bySink: { webhook: 1 } });
    const twice = await sef("dead-letter", "replay", "--data-dir", dataDir);
    expect(JSON.parse(twice.stdout)).toEqual({ replayed: 0, bySink: {} });

    const after = openOutboxReadOnly(dataDir);
    expect(after.due("webhook", 10, Date.now()).map((e) => e.record.RecordId)).toEqual(["rid-1", "rid-3"]);
    after.close();
  });

  it("purges dead-letters for good, by sink, reason and age, once no agent holds the data directory", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "sef-ledger-purge-"));
    const store = openOutbox({ dataDir, maxOutboxBytes: 1 << 30 });
    store.registerSinks(["webhook", "loganalytics"]);
    store.append([record(1), record(2), record(3), record(4)], Date.now());
    const tenDaysAgo = Date.now() - 10 * 86_400_000;
    store.applyOutcomes(
      "webhook",
      [
        { seq: 1, kind: "rejected", reason: "HTTP 400: bad" },
        { seq: 2, kind: "rejected", reason: "HTTP 413: too large" },
        { seq: 3, kind: "delivered" },
      ],
      tenDaysAgo,
    );
    store.applyOutcomes(
      "loganalytics",
      [
        { seq: 1, kind: "delivered" },
        { seq: 2, kind: "delivered" },
        { seq: 3, kind: "rejected", reason: "HTTP 400: column" },
      ],
      Date.now(),
    );
    const bytesBefore = store.bytesInOutbox;
    const agentLock = acquireDataDir(dataDir);

    const refused = await sef("dead-letter", "purge", "--data-dir", dataDir);
    expect(refused.code).toBe(75);
    expect(refused.stderr).toMatch(/refusing to purge while an agent holds/);
    agentLock.release();
    store.close();

    const badAge = await sef("dead-letter", "purge", "--data-dir", dataDir, "--older-than-days", "soon");
    expect(badAge.code).toBe(2);
    expect(badAge.stderr).toMatch(/--older-than-days must be a number of days/);

    // Only the webhook's 400 (ten days old): record 1 is then needed by no sink and leaves the outbox.
    const first = await sef("dead-letter", "purge", "--data-dir", dataDir, "--older-than-days", "7", "--reason", "400");
    expect(first.code, first.stderr).toBe(0);
    const firstOut = JSON.parse(first.stdout) as {
      purged: number;
      bySink: Record<string, number>;
      outboxBytes: number;
    };
    expect(firstOut).toMatchObject({ purged: 1, bySink: { webhook: 1 } });
    expect(firstOut.outboxBytes).toBeLessThan(bytesBefore);
    // The Log Analytics 400 is recent: not older than 7 days.
    const again = await sef("dead-letter", "purge", "--data-dir", dataDir, "--older-than-days", "7", "--reason", "400");
    expect(JSON.parse(again.stdout)).toMatchObject({ purged: 0, bySink: {} });
    const rest = await sef("dead-letter", "purge", "--data-dir", dataDir, "--sink", "loganalytics");
    expect(JSON.parse(rest.stdout)).toMatchObject({ purged: 1, bySink: { loganalytics: 1 } });

    const after = openOutboxReadOnly(dataDir);
    expect(after.deadLetters().map((d) => [d.sink, d.recordId])).toEqual([["webhook", "rid-2"]]);
    expect(after.status().map((s) => [s.sink, s.pending, s.deadLettered])).toEqual([
      ["loganalytics", 1, 0],
      ["webhook", 1, 1],
    ]);
    // Held: 2 (the webhook's dead-letter), 4 (pending for both); gone: 1 (purged and delivered), 3 (delivered and purged).
    expect(after.readAfter(0, 10).map((e) => e.record.RecordId)).toEqual(["rid-2", "rid-4"]);
    expect(after.bytesInOutbox).toBe(after.readAfter(0, 10).reduce((n, e) => n + Buffer.byteLength(e.json), 0));
    after.close();
  });

  it("says clearly when there is no store", async () => {
    const missing = await sef("outbox", "status", "--data-dir", join(tmpdir(), "sef-no-such-dir-xyz"));
    expect(missing.code).toBe(78);
    expect(missing.stderr).toMatch(/no store at .*sef\.db/);
  });
});
