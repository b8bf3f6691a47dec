// Adding an action is one folder plus one line in actions/all.ts. A copy of the repository's src/ gets the notes action's
// folder (fixtures/src/actions/notes: settings with a rule of its own, entry, action) and that one line, and nothing
// else; in that copy `sef check-config` checks the action's section (its schema and its rule), and `sef run` against
// the IMDS simulator plans a note per committed transition, runs it, delivers its record to a sink, and after kill -9
// in the middle of a run resumes it: every note written once, every record once.
import { describe, expect, it } from "vitest";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawn, spawnSync } from "node:child_process";
import { DatabaseSync } from "node:sqlite";
import { startSimulator } from "../../src/testbed/simulator/server.js";
import { loadScenario } from "../../src/testbed/simulator/scenarios.js";
import type { HookRecord, SefRecord } from "../../src/contract/record.js";
import { waitFor } from "../helpers/wait.js";
import { ledgersSettled } from "../helpers/ledger-probe.js";
import { addedLines, changedFiles, copyWithFolderAndLine, repo, sefFromSource } from "../helpers/source-copy.js";

const notesLine = 'export { actionEntry as notes } from "./notes/entry.js";';
const eventId = "2B3C4D5E-6F70-4819-A2B3-C4D5E6F70819"; // the scaleset-terminate scenario's event

/** The copy's `sef run`, with its stderr kept for failure messages. */
function startAgent(
  copy: string,
  config: string,
  imdsUrl: string,
): { exited: Promise<number | string>; stderr: () => string; kill(signal: NodeJS.Signals): void } {
  const args = sefFromSource([
    "run",
    "--config",
    config,
    "--imds-url",
    imdsUrl,
    "--poll-interval-ms",
    "200",
    "--data-dir",
    join(copy, "data"),
    "--metrics-port",
    "0",
  ]);
  const agent = spawn(process.execPath, args, { cwd: copy, stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  agent.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | string>((resolve) =>
    agent.on("exit", (code, signal) => resolve(code ?? signal ?? "unknown")),
  );
  return { exited, stderr: () => stderr.slice(-3000), kill: (signal) => agent.kill(signal) };
}

/** The note rows of the copy's action ledger (read-only, beside the agent's own connection). */
function noteRows(dataDir: string): Array<{ action_key: string; status: string; attempts: number }> {
  if (!existsSync(join(dataDir, "sef.db"))) return [];
  const db = new DatabaseSync(join(dataDir, "sef.db"), { readOnly: true });
  try {
    return db
      .prepare("SELECT action_key, status, attempts FROM actions WHERE kind = 'note' ORDER BY rowid")
      .all() as Array<{ action_key: string; status: string; attempts: number }>;
  } catch {
    return []; // tables not created yet
  } finally {
    db.close();
  }
}

const lines = (path: string): string[] =>
  existsSync(path)
    ? readFileSync(path, "utf8")
        .split("\n")
        .filter((l) => l !== "")
    : [];
const records = (path: string): SefRecord[] => lines(path).map((l) => JSON.parse(l) as SefRecord);
const notesRecords = (path: string): HookRecord[] =>
  records(path).filter((r): r is HookRecord => r.RecordType === "Hook" && r.Detail.startsWith("notes: "));

describe("adding an action", () => {
  it("takes one folder and one line: check-config checks its section; sef run plans, runs and resumes it after kill -9, its records reach a sink", async () => {
    const copy = mkdtempSync(join(tmpdir(), "sef-add-action-"));
    const sim = await startSimulator({ scenario: loadScenario("scaleset-terminate") });
    try {
      copyWithFolderAndLine(
        copy,
        "test/actions/fixtures/src/actions/notes",
        "src/agent/actions/notes",
        "src/agent/actions/all.ts",
        notesLine,
      );
      expect(changedFiles(join(repo, "src"), join(copy, "src"))).toEqual([
        "agent/actions/all.ts",
        "agent/actions/notes/action.ts",
        "agent/actions/notes/entry.ts",
        "agent/actions/notes/settings.ts",
      ]);
      expect(
        addedLines(
          readFileSync(join(repo, "src/agent/actions/all.ts"), "utf8"),
          readFileSync(join(copy, "src/agent/actions/all.ts"), "utf8"),
        ),
      ).toEqual([notesLine]);

      const notes = join(copy, "notes.txt");
      const out = join(copy, "out.jsonl");
      const config = (name: string, section: unknown): string => {
        writeFileSync(
          join(copy, name),
          JSON.stringify({ sinks: [`jsonl:${out}`], heartbeatIntervalMs: 0, notes: section }),
        );
        return name;
      };
      const check = (file: string): { status: number | null; stdout: string; stderr: string } =>
        spawnSync(process.execPath, sefFromSource(["check-config", "--config", file]), {
          cwd: copy,
          encoding: "utf8",
          timeout: 60_000,
        });
      const slow = config("slow.json", { file: notes, label: "seen", delayMs: 600_000 });
      expect(check(slow)).toMatchObject({ status: 0 });
      const sameLabel = check(config("same-label.json", { file: "x", label: "x" }));
      expect(sameLabel.status, sameLabel.stderr).toBe(2);
      expect(sameLabel.stderr).toContain("notes.label: must differ from notes.file");
      const unknownKey = check(config("unknown-key.json", { file: notes, colour: "red" }));
      expect(unknownKey.status, unknownKey.stderr).toBe(2);
      expect(unknownKey.stderr).toContain("notes.colour: unknown setting");

      // The first agent plans a note per transition and starts the Scheduled one, which waits: kill -9 in its middle.
      const first = startAgent(copy, slow, sim.url);
      try {
        await waitFor(
          "the Scheduled note running and the other two planned",
          () => {
            const rows = noteRows(join(copy, "data"));
            return (
              rows.length === 3 && rows[0]!.status === "running" && rows.slice(1).every((r) => r.status === "pending")
            );
          },
          { timeoutMs: 90_000, detail: first.stderr },
        );
      } finally {
        first.kill("SIGKILL");
      }
      expect(await first.exited).toBe("SIGKILL");
      expect(lines(notes)).toEqual([]);

      // The restarted agent finds the note running (its line not written): runs it again, then the others, once each.
      const second = startAgent(copy, config("fast.json", { file: notes, label: "seen" }), sim.url);
      try {
        await waitFor(
          "three notes written and delivered, nothing left to do",
          () => lines(notes).length === 3 && notesRecords(out).length === 3 && ledgersSettled(join(copy, "data")),
          {
            timeoutMs: 90_000,
            detail: second.stderr,
          },
        );
      } finally {
        second.kill("SIGTERM");
      }
      expect(await second.exited, second.stderr()).toBe(0);
      expect(lines(notes)).toEqual([
        `seen ${eventId} Scheduled`,
        `seen ${eventId} Started`,
        `seen ${eventId} Completed`,
      ]);
      expect(notesRecords(out).map((r) => [r.EventStatus, r.Outcome])).toEqual([
        ["Scheduled", "Succeeded"],
        ["Started", "Succeeded"],
        ["Completed", "Succeeded"],
      ]);
      expect(new Set(notesRecords(out).map((r) => r.RecordId)).size).toBe(3);
      expect(noteRows(join(copy, "data")).map((r) => [r.status, r.attempts])).toEqual([
        ["succeeded", 2],
        ["succeeded", 1],
        ["succeeded", 1],
      ]);
    } finally {
      await sim.close();
      rmSync(copy, { recursive: true, force: true });
    }
  }, 300_000);
});

describe("the action folders", () => {
  it("each have an entry; all.ts names each folder's entry after its section, and every kind is its own", async () => {
    const actions = join(repo, "src/agent/actions");
    const folders = readdirSync(actions)
      .filter((name) => statSync(join(actions, name)).isDirectory())
      .sort();
    const everyAction = (await import("../../src/agent/actions/all.js")) as Record<
      string,
      { section: string; kind: string }
    >;
    expect(Object.keys(everyAction).sort()).toEqual(folders);
    for (const [name, entry] of Object.entries(everyAction)) expect(entry.section).toBe(name);
    expect(new Set(Object.values(everyAction).map((e) => e.kind)).size).toBe(folders.length);
    for (const folder of folders) expect(readdirSync(join(actions, folder)), folder).toContain("entry.ts");
  });
});
