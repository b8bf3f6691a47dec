// `sef-testbed simulate` as a child process of the built CLI: the listening line, logs on stderr, exit codes, SIGTERM/SIGINT.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const repo = join(import.meta.dirname, "..", "..");
let mainJs = "";

let scratchDir = "";

beforeAll(() => {
  scratchDir = mkdtempSync(join(tmpdir(), "sef-simulate-cli-"));
  mainJs = join(repo, "src", "testbed", "dist", "cli.js");
  if (!existsSync(mainJs))
    throw new Error("the build did not produce src/testbed/dist/cli.js: run npm run build first");
});

afterAll(() => {
  if (scratchDir) rmSync(scratchDir, { recursive: true, force: true });
});

interface Running {
  child: ChildProcess;
  firstLine: Promise<string>;
  stdout: string[];
  stderr: () => string;
  exit: Promise<number | null>;
}

function run(args: string[]): Running {
  const child = spawn(process.execPath, [mainJs, ...args], { cwd: repo, stdio: ["ignore", "pipe", "pipe"] });
  const stdout: string[] = [];
  let stderr = "";
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const lines = createInterface({ input: child.stdout! });
  const firstLine = new Promise<string>((resolve, reject) => {
    lines.on("line", (line) => {
      stdout.push(line);
      if (stdout.length === 1) resolve(line);
    });
    child.once("exit", () => reject(new Error(`exited before printing a line; stderr: ${stderr}`)));
  });
  firstLine.catch(() => undefined);
  const exit = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return { child, firstLine, stdout, stderr: () => stderr, exit };
}

const listening = /^sef-testbed simulate listening on http:\/\/127\.0\.0\.1:(\d+)$/;

describe("sef-testbed simulate (built CLI)", () => {
  it.each(["SIGTERM", "SIGINT"] as const)(
    "prints the listening line, serves the scenario, logs JSON on stderr and exits 0 on %s",
    async (signal) => {
      const sim = run(["simulate", "--scenario", "live-migration", "--port", "0", "--speed", "6000"]);
      const line = await sim.firstLine;
      const port = Number(listening.exec(line)?.[1]);
      expect(port).toBeGreaterThan(0);
      const res = await request(`http://127.0.0.1:${port}/metadata/scheduledevents?api-version=2020-07-01`, {
        headers: { Metadata: "true" },
      });
      expect(res.statusCode).toBe(200);
      expect(await res.body.json()).toMatchObject({ DocumentIncarnation: 0, Events: [] });
      sim.child.kill(signal);
      expect(await sim.exit).toBe(0);
      expect(sim.stdout).toEqual([line]);
      const logs = sim
        .stderr()
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as { msg: string });
      expect(logs.map((l) => l.msg)).toContain("simulator listening");
      expect(logs.map((l) => l.msg)).toContain("simulator stopping");
    },
  );

  it("lists the built-in scenarios", async () => {
    const sim = run(["simulate", "--list"]);
    expect(await sim.exit).toBe(0);
    const names = sim.stdout.map((l) => l.split(/\s+/)[0]);
    expect(names).toEqual(expect.arrayContaining(["live-migration", "fault-huge-body", "disable-reset", "idle"]));
  });

  it("plays a scenario file and exits 0 at its end with --exit-at-end", async () => {
    const file = join(scratchDir, "tiny.json");
    writeFileSync(
      file,
      JSON.stringify({
        name: "tiny",
        description: "d",
        speed: 100,
        durationSeconds: 20,
        steps: [{ at: 10, events: [{ EventId: "X", EventType: "Freeze", Resources: ["a"] }] }],
      }),
    );
    const sim = run([
      "simulate",
      "--scenario",
      file,
      "--port",
      "0",
      "--host",
      "127.0.0.1",
      "--start-on",
      "listen",
      "--exit-at-end",
    ]);
    expect(await sim.firstLine).toMatch(listening);
    expect(await sim.exit).toBe(0);
    expect(sim.stderr()).toContain("scenario ended");
  });

  it("fails clearly on a bad scenario or flag, and documents its flags in --help", async () => {
    const bad = run(["simulate", "--scenario", "no-such-scenario", "--port", "0"]);
    expect(await bad.exit).toBe(2);
    expect(bad.stderr()).toContain('unknown scenario "no-such-scenario"');
    const badSpeed = run(["simulate", "--speed", "-1"]);
    expect(await badSpeed.exit).not.toBe(0);
    expect(badSpeed.stderr()).toContain("expected a positive number");
    const help = spawnSync(process.execPath, [mainJs, "simulate", "--help"], { encoding: "utf8" });
    expect(help.status).toBe(0);
    for (const flag of [
      "--scenario",
      "--port",
      "--speed",
      "--host",
      "--loop",
      "--list",
      "--exit-at-end",
      "X-Sef-Sim-Vm",
    ])
      expect(help.stdout).toContain(flag);
  });
});
