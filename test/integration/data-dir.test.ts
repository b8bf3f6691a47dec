// The data directory belongs to one agent: a second `sef run` on it exits at once (75) naming the holder and leaves the
// first agent untouched; a crashed holder does not block the next start; a store the user cannot write exits 78 (run as
// nobody from a copy any user can read: the checkout may sit under a 0700 directory).
import { describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { chmodSync, chownSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startSimulator } from "../../src/testbed/simulator/server.js";
import { waitForMetricsUrl, readJsonl, runCli, waitUntil } from "../helpers/agent-process.js";
import { isHeld } from "../../src/agent/store/data-dir-lock.js";
import { copyAgentForOtherUsers } from "../helpers/agent-copy.js";

function args(imdsUrl: string, dir: string): string[] {
  return [
    "run",
    "--imds-url",
    imdsUrl,
    "--poll-interval-ms",
    "200",
    "--data-dir",
    join(dir, "data"),
    "--sink",
    `jsonl:${join(dir, "records.jsonl")}`,
    "--heartbeat-interval-ms",
    "0",
    "--metrics-port",
    "0",
  ];
}

describe("one agent per data directory", () => {
  it("refuses a second agent at once, keeps the first one working, and is free again after a crash", async () => {
    const sim = await startSimulator({ scenario: "idle" });
    const dir = mkdtempSync(join(tmpdir(), "sef-lock-"));
    const first = runCli(args(sim.url, dir));
    let third: ReturnType<typeof runCli> | undefined;
    try {
      await waitForMetricsUrl(first);
      expect(isHeld(join(dir, "data"))).toBe(true);

      const startedMs = performance.now();
      const second = runCli(args(sim.url, dir));
      expect(await second.exited).toBe(75);
      expect(performance.now() - startedMs).toBeLessThan(5000);
      expect(second.stderr()).toContain(
        `data directory ${join(dir, "data")} is in use by another sef (pid ${first.child.pid})`,
      );

      // The first agent still records and delivers.
      const eventId = "DA7AD1E0-0000-4000-8000-000000000001";
      sim.setEvents([{ EventId: eventId, EventType: "Reboot", Resources: ["WestNO_0"], notBeforeInSeconds: 300 }]);
      await waitUntil(
        () => readJsonl(join(dir, "records.jsonl")).some((r) => r.EventId === eventId),
        10_000,
        "the first agent's record",
      );

      // kill -9: the OS drops the lock with the process.
      await first.stop("SIGKILL");
      third = runCli(args(sim.url, dir));
      await waitForMetricsUrl(third!);
      expect(await third.stop("SIGTERM")).toBe(0);
      expect(isHeld(join(dir, "data"))).toBe(false);
      // Exactly one Scheduled record for the event, though three agents saw the directory. (The kill may land after
      // the jsonl line was written but before the ledger settled it: the next agent then sends the same record — the
      // same RecordId — again, which is the in-doubt repeat the ledger allows. A second agent recording the event
      // anew would have made a second RecordId.)
      const scheduled = readJsonl(join(dir, "records.jsonl")).filter(
        (r) => r.EventId === eventId && r.EventStatus === "Scheduled",
      );
      expect(scheduled.length).toBeGreaterThanOrEqual(1);
      expect(new Set(scheduled.map((r) => r.RecordId)).size).toBe(1);
    } finally {
      await first.stop("SIGKILL");
      await third?.stop("SIGKILL");
      await sim.close();
    }
  });
});

describe("a store the service user cannot write", () => {
  it("exits 78 naming sef.db instead of logging SQLITE_READONLY forever", async () => {
    const sim = await startSimulator({ scenario: "idle" });
    const dir = mkdtempSync(join(tmpdir(), "sef-ro-"));
    chmodSync(dir, 0o755);
    const copy = await copyAgentForOtherUsers();
    try {
      // A run as root leaves sef.db owned by root; the directory then goes to the service user (nobody).
      const asRoot = runCli(args(sim.url, dir));
      await waitForMetricsUrl(asRoot);
      expect(await asRoot.stop("SIGTERM")).toBe(0);
      chownSync(join(dir, "data"), 65534, 65534);
      const asNobody = () =>
        spawnSync(
          "setpriv",
          ["--reuid=65534", "--regid=65534", "--clear-groups", copy.node, copy.cli, ...args(sim.url, dir)],
          { cwd: "/", encoding: "utf8", timeout: 10_000 },
        );

      let run = asNobody();
      expect(run.error).toBeUndefined();
      expect(run.status, run.stderr).toBe(78);
      expect(run.stderr).toContain(`sef: lock file ${join(dir, "data", "sef.lock")} cannot be written`);

      chownSync(join(dir, "data", "sef.lock"), 65534, 65534);
      run = asNobody();
      expect(run.status, run.stderr).toBe(78);
      expect(run.stderr).toContain(`sef: store ${join(dir, "data", "sef.db")} cannot be written`);
    } finally {
      copy.remove();
      await sim.close();
    }
  }, 60_000);
});
