// Adding a sink is one folder plus one line in sinks/all.ts. A copy of the repository's src/ gets the memo sink's folder
// (fixtures/src/sinks/memo: settings with a rule of its own, encode, classify, sink, factory) and that one line, and
// nothing else; in that copy `sef check-config` checks the sink's section (its schema and its rule) and `sef run
// --sink memo` builds the sink and delivers the simulator's records to it.
import { describe, expect, it } from "vitest";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawn, spawnSync } from "node:child_process";
import { startSimulator } from "../../src/testbed/simulator/server.js";
import { loadScenario } from "../../src/testbed/simulator/scenarios.js";
import { waitFor } from "../helpers/wait.js";
import { addedLines, changedFiles, copyWithFolderAndLine, repo, sefFromSource } from "../helpers/source-copy.js";

const memoLine = 'export { sinkFactory as memo } from "./memo/factory.js";';

/** A copy of src/ (and what running it from source needs) with the memo folder and its line in all.ts. */
const copyWithMemo = (copy: string): void =>
  copyWithFolderAndLine(
    copy,
    "test/sinks/fixtures/src/sinks/memo",
    "src/agent/sinks/memo",
    "src/agent/sinks/all.ts",
    memoLine,
  );
const sefArgs = sefFromSource;

describe("adding a sink", () => {
  it("takes one folder and one line: check-config checks its section, sef run --sink builds it and a record reaches it", async () => {
    const copy = mkdtempSync(join(tmpdir(), "sef-add-sink-"));
    const sim = await startSimulator({ scenario: loadScenario("scaleset-terminate") });
    try {
      copyWithMemo(copy);
      expect(changedFiles(join(repo, "src"), join(copy, "src"))).toEqual([
        "agent/sinks/all.ts",
        "agent/sinks/memo/classify.ts",
        "agent/sinks/memo/encode.ts",
        "agent/sinks/memo/factory.ts",
        "agent/sinks/memo/settings.ts",
        "agent/sinks/memo/sink.ts",
      ]);
      expect(
        addedLines(
          readFileSync(join(repo, "src/agent/sinks/all.ts"), "utf8"),
          readFileSync(join(copy, "src/agent/sinks/all.ts"), "utf8"),
        ),
      ).toEqual([memoLine]);

      const out = join(copy, "memo.txt");
      const config = (name: string, memo: unknown): string => {
        writeFileSync(join(copy, name), JSON.stringify({ sinks: ["memo"], memo }));
        return name;
      };
      const check = (file: string): { status: number | null; stdout: string; stderr: string } =>
        spawnSync(process.execPath, sefArgs(["check-config", "--config", file]), {
          cwd: copy,
          encoding: "utf8",
          timeout: 60_000,
        });
      expect(check(config("good.json", { file: out, label: "seen" }))).toMatchObject({
        status: 0,
        stdout: expect.stringContaining("sinks memo"),
      });
      const sameLabel = check(config("same-label.json", { file: "x", label: "x" }));
      expect(sameLabel.status, sameLabel.stderr).toBe(2);
      expect(sameLabel.stderr).toContain("memo.label: must differ from memo.file");
      const unknownKey = check(config("unknown-key.json", { file: out, colour: "red" }));
      expect(unknownKey.status, unknownKey.stderr).toBe(2);
      expect(unknownKey.stderr).toContain("memo.colour: unknown setting");

      const args = sefArgs([
        "run",
        "--config",
        "good.json",
        "--imds-url",
        sim.url,
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
      const exited = new Promise<number | null>((resolve) => agent.on("exit", (code) => resolve(code)));
      try {
        await waitFor(
          "a transition record in the memo sink's file",
          () => existsSync(out) && readFileSync(out, "utf8").includes('"RecordType":"Transition"'),
          {
            timeoutMs: 60_000,
            detail: () => `stderr:\n${stderr.slice(-3000)}`,
          },
        );
      } finally {
        agent.kill("SIGTERM");
      }
      expect(await exited, stderr.slice(-3000)).toBe(0);
      const lines = readFileSync(out, "utf8").trimEnd().split("\n");
      for (const line of lines) expect(line).toMatch(/^seen \{"/);
      expect(lines.map((l) => (JSON.parse(l.slice("seen ".length)) as { RecordType: string }).RecordType)).toContain(
        "Transition",
      );
    } finally {
      await sim.close();
      rmSync(copy, { recursive: true, force: true });
    }
  }, 180_000);
});

describe("the sink folders", () => {
  it("each hold the same files, and all.ts names each folder's factory after its type", async () => {
    const sinks = join(repo, "src/agent/sinks");
    const folders = readdirSync(sinks)
      .filter((name) => statSync(join(sinks, name)).isDirectory())
      .sort();
    const everySink = (await import("../../src/agent/sinks/all.js")) as Record<string, { section: string }>;
    expect(Object.keys(everySink).sort()).toEqual(folders);
    for (const [name, factory] of Object.entries(everySink)) expect(factory.section).toBe(name);
    for (const folder of folders) {
      const files = readdirSync(join(sinks, folder));
      expect(files, folder).toEqual(
        expect.arrayContaining(["settings.ts", "encode.ts", "classify.ts", "sink.ts", "factory.ts"]),
      );
    }
  });
});
