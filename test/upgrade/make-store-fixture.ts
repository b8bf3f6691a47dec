// Regenerates an upgrade fixture: runs the agent of an older commit (built in its own worktree) against the simulator
// until its store holds what an upgrade must carry over, then copies that store (the write-ahead log checkpointed into
// sef.db) and the installation's agent-id to OUT_DIR. See README.md next to this script for the commit and the exact commands.
//
//   npx tsx test/upgrade/make-store-fixture.ts OLD_TREE OUT_DIR
//
// Run A (sinks: a webhook that answers 503, a jsonl file under /dev/null): a Freeze event is
// approved (approval.mode on) and its Scheduled hook "note" succeeds; nothing is delivered. SIGTERM. Run B (the webhook
// only: the old release parks the jsonl sink): a Reboot event, its hook "note" succeeds and its hook "slow" is running
// when the agent is killed (kill -9).
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { startSimulator } from "../../src/testbed/simulator/server.js";
import { waitFor } from "../helpers/wait.js";
import { fixtureEvents, fixtureHookNames, parkedSinkSpec } from "./fixture.js";

if (process.argv.length !== 4) throw new Error("usage: npx tsx test/upgrade/make-store-fixture.ts OLD_TREE OUT_DIR");
const oldTree = resolve(process.argv[2]!);
const outDir = resolve(process.argv[3]!);
const oldCli = join(oldTree, "src/agent/dist/cli/main.js");
if (!existsSync(oldCli)) throw new Error(`${oldCli}: not built (npm ci in ${oldTree} builds it)`);
const commit = spawnSync("git", ["rev-parse", "HEAD"], { cwd: oldTree, encoding: "utf8" }).stdout.trim();

const scratch = mkdtempSync(join(tmpdir(), "sef-upgrade-fixture-"));
const dataDir = join(scratch, "data");
const sim = await startSimulator({ scenario: "idle" });
const refusing = createServer((req, res) => {
  req.resume();
  req.on("end", () => res.writeHead(503, { "retry-after": "1" }).end("not today"));
});
await new Promise<void>((r) => refusing.listen(0, "127.0.0.1", r));
const webhookUrl = `http://127.0.0.1:${(refusing.address() as AddressInfo).port}/hook`;

function config(name: string, sinks: string[]): string {
  const path = join(scratch, `${name}.json`);
  const hook = (hookName: string, command: string[], eventTypes: string[]) => ({
    name: hookName,
    on: ["Scheduled"],
    command,
    eventTypes,
  });
  writeFileSync(
    path,
    JSON.stringify({
      imdsUrl: sim.url,
      pollIntervalMs: 200,
      dataDir,
      sinks,
      heartbeatIntervalMs: 0,
      metricsPort: 0,
      approval: { mode: "on", rules: [{ eventType: ["Freeze"] }] },
      hooks: [
        hook(fixtureHookNames.note, ["/bin/true"], ["Freeze", "Reboot"]),
        hook(fixtureHookNames.slow, ["/bin/sleep", "600"], ["Reboot"]),
      ],
    }),
  );
  return path;
}

/** The old agent (its own Node 24 and build), its stderr kept for the errors. */
function oldAgent(configPath: string): { child: ChildProcess; stderr: () => string; exited: Promise<number | string> } {
  const child = spawn(join(oldTree, "node_modules/.bin/node"), [oldCli, "run", "--config", configPath], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr!.on("data", (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<number | string>((r) =>
    child.on("exit", (code, signal) => r(code ?? signal ?? "unknown")),
  );
  return { child, stderr: () => stderr, exited };
}

/** Reads the store beside the running agent (read-only). */
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
const actions = () =>
  ask<{ name: string; status: string; event_key: string }>("SELECT name, status, event_key FROM actions");
const outboxRecords = () => ask<{ n: number }>("SELECT count(*) AS n FROM outbox")[0]?.n ?? 0;

try {
  // Run A: the Freeze is approved and its hook succeeds; both sinks refuse or fail.
  const a = oldAgent(config("run-a", [`webhook:${webhookUrl}`, parkedSinkSpec]));
  sim.setEvents([fixtureEvents.freeze]);
  // Four records: the Freeze Scheduled, its hook's and its approval's reports, the Freeze Started (once approved).
  await waitFor(
    "the approval and the note hook of the Freeze, and the Freeze started",
    () =>
      sim.status().approvals.length === 1 &&
      actions().some((x) => x.name === fixtureHookNames.note && x.status === "succeeded") &&
      outboxRecords() === 4,
    {
      timeoutMs: 60_000,
      detail: () => a.stderr().slice(-2000),
    },
  );
  a.child.kill("SIGTERM");
  if ((await a.exited) !== 0) throw new Error(`run A did not stop cleanly: ${a.stderr().slice(-2000)}`);

  // Run B: the jsonl sink is no longer configured (parked); the Reboot's slow hook is running at kill -9.
  const b = oldAgent(config("run-b", [`webhook:${webhookUrl}`]));
  sim.setEvents([fixtureEvents.reboot]);
  // Three more: the Freeze Completed, the Reboot Scheduled, its note hook's report.
  await waitFor(
    "the slow hook of the Reboot to be running, the rest recorded",
    () => actions().some((x) => x.name === fixtureHookNames.slow && x.status === "running") && outboxRecords() === 7,
    {
      timeoutMs: 60_000,
      detail: () => b.stderr().slice(-2000),
    },
  );
  if (!/parked/.test(b.stderr()))
    throw new Error(`run B did not say it parked the jsonl sink: ${b.stderr().slice(-2000)}`);
  const hookPids = spawnSync("ps", ["-o", "pid=", "--ppid", String(b.child.pid)], { encoding: "utf8" })
    .stdout.split("\n")
    .filter((l) => l.trim() !== "")
    .map(Number);
  b.child.kill("SIGKILL");
  await b.exited;
  for (const pid of hookPids) process.kill(-pid, "SIGKILL"); // the killed agent's hook, in its own process group

  // The store as the crash left it, its log checkpointed into the database file.
  const db = new DatabaseSync(join(dataDir, "sef.db"));
  db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  db.close();
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  for (const file of ["sef.db", "agent-id"]) copyFileSync(join(dataDir, file), join(outDir, file));
  const summary = {
    commit,
    actions: actions()
      .map((x) => `${x.event_key} ${x.name} ${x.status}`)
      .sort(),
    pending: ask<{ sink: string; pending: number }>("SELECT sink, pending FROM sinks ORDER BY sink"),
    dataDirFiles: readdirSync(dataDir).sort(),
  };
  console.log(JSON.stringify(summary, null, 2));
  if (readFileSync(join(outDir, "sef.db")).length > 1 << 20) throw new Error("the fixture is over 1 MiB");
} finally {
  await sim.close();
  await new Promise((r) => refusing.close(r));
  rmSync(scratch, { recursive: true, force: true });
}
