// `sef run` holds V8's optimizing compilers (Maglev, TurboFan) while it idles and releases them at a backlog
// (src/agent/cli/optimizing-tiers.ts). Seen from outside with `--trace-opt`: the built agent compiles nothing optimized while
// it polls; with a backlog in its outbox it releases them, says so, optimizes and drains everything. And the
// mechanism itself on this Node: held flags stop tier-up, released flags bring it back in the same process.
import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { startSimulator } from "../../src/testbed/simulator/server.js";
import { openOutbox } from "../helpers/outbox.js";
import { heartbeatRecord } from "../helpers/records.js";
import { backlogForOptimizingTiers, isBacklog } from "../../src/agent/cli/optimizing-tiers.js";
import { cliPath, logLines, readJsonl, waitUntil } from "../helpers/agent-process.js";

/**
 * `node --trace-opt --no-maglev --no-turbofan src/agent/dist/cli/main.js ...args`, as the launchers start `sef run` (bin/sef, the
 * Windows service, the container), with its output collected.
 */
function runTraced(args: string[]): { stdout: () => string; stderr: () => string; stop: () => Promise<number | null> } {
  const child = spawn(process.execPath, ["--trace-opt", "--no-maglev", "--no-turbofan", cliPath, ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
  child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
  const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
  return {
    stdout: () => stdout,
    stderr: () => stderr,
    stop: async () => {
      child.kill("SIGTERM");
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

const optimized = (trace: string): string[] => trace.split("\n").filter((l) => l.startsWith("[completed compiling"));
const releaseLine = /optimizing compilers \(Maglev, TurboFan\) released/;

describe("isBacklog", () => {
  it("is a backlog when one sink has the threshold waiting, whatever the others have", () => {
    expect(isBacklog({})).toBe(false);
    expect(isBacklog({ a: backlogForOptimizingTiers - 1, b: backlogForOptimizingTiers - 1 })).toBe(false);
    expect(isBacklog({ a: 0, b: backlogForOptimizingTiers })).toBe(true);
    expect(isBacklog({ a: 5 }, 5)).toBe(true);
  });
});

describe("the optimizing compilers of `sef run`", () => {
  it("stay off while the agent idles: nothing is optimized over 40 polls, and no release is logged", async () => {
    const sim = await startSimulator({ scenario: "idle" });
    const dir = mkdtempSync(join(tmpdir(), "sef-tiers-idle-"));
    const agent = runTraced(["run", "--imds-url", sim.url, "--poll-interval-ms", "200", "--data-dir", join(dir, "data"), "--sink", `jsonl:${join(dir, "out.jsonl")}`, "--heartbeat-interval-ms", "0", "--metrics-port", "0"]);
    try {
      const polls = (): number =>
        Object.entries(sim.status().requests)
          .filter(([path]) => path.includes("scheduledevents"))
          .reduce((n, [, byStatus]) => n + Object.values(byStatus).reduce((a, b) => a + b, 0), 0);
      await waitUntil(() => polls() >= 40, 30_000, "40 polls");
      expect(await agent.stop()).toBe(0);
      expect(optimized(agent.stdout()), "functions optimized while idle").toEqual([]);
      expect(agent.stderr()).not.toMatch(releaseLine);
    } finally {
      await agent.stop();
      await sim.close();
    }
  }, 60_000);

  it("are released at a backlog: the agent logs it, optimizes, and drains every record", async () => {
    const sim = await startSimulator({ scenario: "idle" });
    const dir = mkdtempSync(join(tmpdir(), "sef-tiers-backlog-"));
    const out = join(dir, "out.jsonl");
    const records = 3 * backlogForOptimizingTiers;
    const store = openOutbox({ dataDir: join(dir, "data"), maxOutboxBytes: 1 << 30 });
    store.registerSinks([`jsonl:${out}`]);
    store.append(Array.from({ length: records }, (_, i) => heartbeatRecord(i, { tag: "backlog" })), Date.now());
    store.close();
    const agent = runTraced(["run", "--imds-url", sim.url, "--poll-interval-ms", "1000", "--data-dir", join(dir, "data"), "--sink", `jsonl:${out}`, "--heartbeat-interval-ms", "0", "--metrics-port", "0"]);
    try {
      await waitUntil(() => readJsonl(out).length >= records, 30_000, "the backlog delivered");
      await waitUntil(() => releaseLine.test(agent.stderr()), 5_000, "the release in the log");
      expect(await agent.stop()).toBe(0);
      const release = logLines(agent.stderr()).find((l) => releaseLine.test(String(l.msg)))!;
      expect(release.undelivered).toEqual({ [`jsonl:${out}`]: expect.any(Number) });
      expect((release.undelivered as Record<string, number>)[`jsonl:${out}`]).toBeGreaterThanOrEqual(backlogForOptimizingTiers);
      expect(optimized(agent.stdout()).length, "functions optimized during the drain").toBeGreaterThan(0);
      expect(new Set(readJsonl(out).map((r) => r.RecordId)).size).toBe(records);
    } finally {
      await agent.stop();
      await sim.close();
    }
  }, 60_000);
});

describe("holding and releasing the flags on this Node", () => {
  it("held, a hot function is not optimized; released, it is, in the same process", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sef-tiers-mechanism-"));
    const script = join(dir, "hot.mjs");
    writeFileSync(
      script,
      [
        // What main.ts does for `sef run`: the two flags first, then the module told they are held.
        'import { setFlagsFromString } from "node:v8";',
        'setFlagsFromString("--no-maglev"); setFlagsFromString("--no-turbofan");',
        `const { markOptimizingTiersHeld, releaseOptimizingTiers } = await import(${JSON.stringify(new URL("../../src/agent/dist/cli/optimizing-tiers.js", import.meta.url).href)});`,
        "markOptimizingTiersHeld();",
        "function hotSum(n) { let s = 0; for (let i = 0; i < n; i++) s = (s * 31 + i) | 0; return s; }",
        "for (let i = 0; i < 20000; i++) hotSum(500);",
        "console.log('--- released:', releaseOptimizingTiers(), releaseOptimizingTiers());",
        "for (let i = 0; i < 20000; i++) hotSum(500);",
      ].join("\n"),
    );
    const child = spawn(process.execPath, ["--trace-opt", script], { stdio: ["ignore", "pipe", "pipe"], timeout: 30_000 });
    let stdout = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    expect(await new Promise((resolve) => child.on("close", resolve))).toBe(0);
    const [before, after] = stdout.split(/^--- released: true false$/m);
    expect(after, stdout).toBeDefined();
    expect(optimized(before!).filter((l) => l.includes("hotSum"))).toEqual([]);
    expect(optimized(after!).filter((l) => l.includes("hotSum")).length).toBeGreaterThan(0);
  }, 30_000);
});
