// Every command the agent tells an operator to run, run exactly as printed — from another directory, by a shell whose
// SEF_DATA_DIR names another directory — acts on the agent's own data directory or file: the parked-sink warning's and
// `sef outbox status`'s `sef outbox drop-sink NAME --data-dir DIR`, the exposed config file's `chmod o-r FILE`, and
// the corrupt store's `mv FILE FILE.corrupt`. The agent itself ran from its own directory with relative paths.
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { cliPath, logLines, runCli, waitUntil } from "../helpers/agent-process.js";
import { heartbeatRecord } from "../helpers/records.js";
import { openOutbox, openOutboxReadOnly } from "../helpers/outbox.js";

const scratch = mkdtempSync(join(tmpdir(), "sef-hints-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Where the agent runs (its paths relative to it), and where the operator's shell is. */
const agentDir = join(scratch, "agent");
const operatorDir = join(scratch, "operator");
const otherDataDir = join(scratch, "not-the-agents");
const binDir = join(scratch, "bin");
for (const dir of [agentDir, operatorDir, binDir]) mkdirSync(dir);
// `sef` on the operator's PATH: the built CLI on this Node.
writeFileSync(join(binDir, "sef"), `#!/bin/sh\nexec "${process.execPath}" "${cliPath}" "$@"\n`, { mode: 0o755 });

/** Runs `command` as printed, in a POSIX shell in the operator's directory, with SEF_DATA_DIR naming another directory. */
function runAsPrinted(command: string): { status: number | null; stdout: string; stderr: string } {
  const env = { ...process.env, PATH: `${binDir}:${process.env.PATH ?? ""}`, SEF_DATA_DIR: otherDataDir };
  const result = spawnSync("sh", ["-c", command], { cwd: operatorDir, env, encoding: "utf8", timeout: 60_000 });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** `sef run` from the agent's directory with a relative data directory, an unreachable IMDS and no metrics port. */
function runAgent(dataDir: string, extra: string[] = []): ReturnType<typeof runCli> {
  return runCli(
    [
      "run",
      "--data-dir",
      dataDir,
      "--sink",
      "stdout",
      "--imds-url",
      "http://127.0.0.1:9",
      "--metrics-port",
      "0",
      "--heartbeat-interval-ms",
      "0",
      ...extra,
    ],
    {
      cwd: agentDir,
    },
  );
}

describe("hints the agent prints run as printed", () => {
  it("the parked sink: `sef outbox drop-sink` from the warning (and from `sef outbox status`) gives up the agent's own sink", async () => {
    const dataDir = join(agentDir, "parked-data");
    const store = openOutbox({ dataDir });
    store.registerSinks(["webhook", "stdout"]);
    store.append([heartbeatRecord(1), heartbeatRecord(2), heartbeatRecord(3)], Date.now());
    store.applyOutcomes(
      "stdout",
      [1, 2, 3].map((seq) => ({ seq, kind: "delivered" as const })),
      Date.now(),
    );
    store.close();

    const agent = runAgent("parked-data");
    let warning = "";
    await waitUntil(
      () =>
        (warning = String(
          logLines(agent.stderr()).find((l) => /no longer configured/.test(String(l.msg)))?.msg ?? "",
        )) !== "",
      60_000,
      "the parked-sink warning",
    );
    expect(await agent.stop()).toBe(0);
    const fromLog = /with: (sef outbox drop-sink .*)$/.exec(warning)?.[1] ?? "";
    expect(fromLog).toBe(`sef outbox drop-sink webhook --data-dir ${dataDir}`);

    const status = runAsPrinted(`sef outbox status --data-dir ${dataDir}`);
    expect(status.status, status.stderr).toBe(0);
    expect(status.stdout.split("\n").map((l) => l.trim())).toContain(fromLog);

    const dropped = runAsPrinted(fromLog);
    expect(dropped.status, dropped.stderr).toBe(0);
    expect(JSON.parse(dropped.stdout)).toMatchObject({ sink: "webhook", parked: true, deadLettered: 3 });
    expect(
      readFileSync(join(dataDir, "dead-letter", "webhook.jsonl"), "utf8")
        .trim()
        .split("\n"),
    ).toHaveLength(3);
    const after = openOutboxReadOnly(dataDir);
    expect(after.parkedSinks()).toEqual([]);
    after.close();
    expect(existsSync(otherDataDir), "SEF_DATA_DIR of the operator's shell untouched").toBe(false);
    expect(existsSync(join(operatorDir, "parked-data")), "nothing relative to the operator's directory").toBe(false);
  }, 120_000);

  it("the config file holding a secret: `chmod o-r FILE` from the warning takes the others' read access away", async () => {
    const config = join(agentDir, "exposed.json");
    const connectionString = "Endpoint=sb://127.0.0.1/;SharedAccessKeyName=k;SharedAccessKey=c2VjcmV0;EntityPath=hub";
    writeFileSync(config, JSON.stringify({ eventhubs: { connectionString } }));
    chmodSync(config, 0o644);
    const agent = runAgent("exposed-data", ["--config", "exposed.json"]);
    let warning = "";
    await waitUntil(
      () =>
        (warning = String(
          logLines(agent.stderr()).find((l) => /other users may read it/.test(String(l.msg)))?.msg ?? "",
        )) !== "",
      60_000,
      "the exposed-config warning",
    );
    await agent.stop();
    const chmod = /: (chmod o-r \S+) /.exec(warning)?.[1] ?? "";
    expect(chmod).toBe(`chmod o-r ${config}`);
    expect(runAsPrinted(chmod).status).toBe(0);
    expect(statSync(config).mode & 0o777).toBe(0o640);
  }, 120_000);

  it("the corrupt store: `mv FILE FILE.corrupt` from the message moves the agent's own store aside; the agent then starts afresh", async () => {
    const dataDir = join(agentDir, "corrupt-data");
    mkdirSync(dataDir);
    writeFileSync(
      join(dataDir, "sef.db"),
      "this is not a database, nor anything SQLite would take for one".repeat(100),
    );
    const first = runAgent("corrupt-data");
    expect(await first.exited).toBe(78);
    const mv = /\(e\.g\. (mv \S+ \S+)\)/.exec(first.stderr())?.[1] ?? "";
    expect(mv).toBe(`mv ${join(dataDir, "sef.db")} ${join(dataDir, "sef.db")}.corrupt`);
    expect(runAsPrinted(mv).status).toBe(0);
    expect(existsSync(join(dataDir, "sef.db.corrupt"))).toBe(true);
    const again = runAgent("corrupt-data");
    await waitUntil(
      () => logLines(again.stderr()).some((l) => l.msg === "agent starting" && l.dataDir === dataDir),
      60_000,
      "the agent starting on a fresh store",
    );
    expect(await again.stop()).toBe(0);
    expect(existsSync(join(dataDir, "sef.db"))).toBe(true);
  }, 120_000);
});

describe("ledger commands create no store where none is", () => {
  const commands = [
    ["outbox", "status"],
    ["outbox", "drop-sink", "webhook"],
    ["dead-letter", "list"],
    ["dead-letter", "replay"],
    ["dead-letter", "purge"],
  ];
  for (const args of commands) {
    it(`sef ${args.join(" ")} on a directory without a store: exit 78 naming the file; nothing created`, () => {
      const missing = join(scratch, `missing-${args.join("-")}`);
      const result = runAsPrinted(["sef", ...args, "--data-dir", missing].join(" "));
      expect(result.status, result.stderr).toBe(78);
      expect(result.stderr).toContain(`no store at ${join(missing, "sef.db")}`);
      expect(existsSync(missing)).toBe(false);
    });
  }
  it("with no --data-dir, SEF_DATA_DIR's directory, untouched when it holds no store", () => {
    const result = runAsPrinted("sef dead-letter replay");
    expect(result.status).toBe(78);
    expect(result.stderr).toContain(`no store at ${join(otherDataDir, "sef.db")}`);
    expect(existsSync(otherDataDir)).toBe(false);
  });
});
