// `npm start` must work on a fresh checkout: the demo runs the whole pipeline and exits 0 only if every sink got every record.
import { describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const demo = fileURLToPath(new URL("../../src/testbed/dist/demo/main.js", import.meta.url));

describe("demo", () => {
  it("delivers every record of the scenario to stdout, jsonl, Event Hubs and Log Analytics peers", () => {
    const result = spawnSync(process.execPath, [demo, "spot-preempt"], { encoding: "utf8", timeout: 60_000 });
    expect(result.status, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toMatch(/Event Hubs peer\s+\d+ record\(s\) ok/);
    expect(result.stdout).toMatch(/Log Analytics peer\s+\d+ record\(s\) ok/);
    expect(result.stdout).toMatch(/Preempt/);
  }, 70_000);
});
