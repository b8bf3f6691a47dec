// Regenerates the schema-version-1 upgrade fixture: runs the agent of a commit from before the delivery ledger (its
// store keeps one cursor per sink, `cursors`, instead of per-record deliveries) against the simulator until its webhook
// sink has taken the Freeze's Scheduled record and refused the Reboot's, then kills it and copies its store (the
// write-ahead log checkpointed into sef.db) to OUT_DIR. See README.md next to this script for the commit and commands.
//
//   npx tsx test/upgrade/make-store-fixture-v1.ts OLD_TREE OUT_DIR
import { spawn, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { startSimulator } from "../../src/testbed/simulator/server.js";
import { waitFor } from "../helpers/wait.js";
import { fixtureEvents } from "./fixture.js";

if (process.argv.length !== 4) throw new Error("usage: npx tsx test/upgrade/make-store-fixture-v1.ts OLD_TREE OUT_DIR");
const oldTree = resolve(process.argv[2]!);
const outDir = resolve(process.argv[3]!);
const oldCli = join(oldTree, "dist/cli/main.js");
if (!existsSync(oldCli)) throw new Error(`${oldCli}: not built (npm ci in ${oldTree} builds it)`);
const commit = spawnSync("git", ["rev-parse", "HEAD"], { cwd: oldTree, encoding: "utf8" }).stdout.trim();

const scratch = mkdtempSync(join(tmpdir(), "sef-upgrade-fixture-v1-"));
const dataDir = join(scratch, "data");
const sim = await startSimulator({ scenario: "idle" });
/** Takes records while `accepting`, then answers 503: the Freeze's record is acknowledged, the Reboot's is not. */
let accepting = true;
const accepted: string[] = [];
const receiver = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", () => {
    if (!accepting) return void res.writeHead(503, { "retry-after": "1" }).end("not today");
    for (const r of JSON.parse(Buffer.concat(chunks).toString("utf8")) as Array<{ RecordId: string }>)
      accepted.push(r.RecordId);
    res.writeHead(200).end();
  });
});
await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
const webhookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
const configPath = join(scratch, "config.json");
writeFileSync(
  configPath,
  JSON.stringify({
    imdsUrl: sim.url,
    pollIntervalMs: 200,
    dataDir,
    sinks: [`webhook:${webhookUrl}`],
    heartbeatIntervalMs: 0,
    metricsPort: 0,
  }),
);

function ask<T>(sql: string): T[] {
  if (!existsSync(join(dataDir, "sef.db"))) return [];
  const db = new DatabaseSync(join(dataDir, "sef.db"), { readOnly: true });
  try {
    return db.prepare(sql).all() as T[];
  } catch {
    return [];
  } finally {
    db.close();
  }
}
const outboxRecords = () => ask<{ n: number }>("SELECT count(*) AS n FROM outbox")[0]?.n ?? 0;

const agent = spawn(join(oldTree, "node_modules/.bin/node"), [oldCli, "run", "--config", configPath], {
  stdio: ["ignore", "ignore", "pipe"],
});
let stderr = "";
agent.stderr!.on("data", (c: Buffer) => (stderr += c.toString()));
const exited = new Promise((r) => agent.on("exit", r));
try {
  sim.setEvents([fixtureEvents.freeze]);
  await waitFor("the Freeze's Scheduled record taken by the webhook", () => accepted.length === 1, {
    timeoutMs: 60_000,
    detail: () => stderr.slice(-2000),
  });
  accepting = false;
  sim.setEvents([fixtureEvents.freeze, fixtureEvents.reboot]);
  await waitFor("the Reboot's Scheduled record in the outbox, refused", () => outboxRecords() === 2, {
    timeoutMs: 60_000,
    detail: () => stderr.slice(-2000),
  });
  agent.kill("SIGKILL");
  await exited;

  const db = new DatabaseSync(join(dataDir, "sef.db"));
  const version = (db.prepare("SELECT value FROM meta WHERE key = 'schema_version'").get() as { value: string }).value;
  db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  db.close();
  if (version !== "1") throw new Error(`the old agent wrote schema version ${version}, not 1`);
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  for (const file of ["sef.db", "agent-id"].filter((f) => existsSync(join(dataDir, f))))
    copyFileSync(join(dataDir, file), join(outDir, file));
  console.log(
    JSON.stringify(
      {
        commit,
        acceptedRecordIds: accepted,
        cursors: ask("SELECT * FROM cursors"),
        outbox: ask<{ seq: number }>("SELECT seq FROM outbox ORDER BY seq"),
        dataDirFiles: readdirSync(dataDir).sort(),
      },
      null,
      2,
    ),
  );
} finally {
  agent.kill("SIGKILL");
  await sim.close();
  await new Promise((r) => receiver.close(r));
  rmSync(scratch, { recursive: true, force: true });
}
