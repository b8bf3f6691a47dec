// Configuration: precedence, defaults, and errors that name every bad field.
import { describe, expect, it } from "vitest";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig, ConfigError } from "../../src/config/load.js";

function file(content: unknown): string {
  const path = join(mkdtempSync(join(tmpdir(), "sef-cfg-")), "config.json");
  writeFileSync(path, typeof content === "string" ? content : JSON.stringify(content));
  return path;
}

function problems(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error("expected a ConfigError");
}

describe("loadConfig", () => {
  it("applies defaults", () => {
    const { config } = loadConfig({ env: {} });
    expect(config).toMatchObject({ apiVersion: "2020-07-01", pollIntervalMs: 1000, sinks: ["stdout"] });
    // No imdsUrl by default: the endpoint is discovered (169.254.169.254 first).
    expect(config.imdsUrl).toBeUndefined();
    expect(config.imdsDiscovery).toMatchObject({ linkLocalAddress: "169.254.169.254", port: 80, activeDhcp: { enabled: false } });
  });

  it("layers file < environment < flags", () => {
    const path = file({ pollIntervalMs: 2000, dataDir: "/from/file", apiVersion: "2019-08-01" });
    const { config } = loadConfig({ file: path, env: { SEF_POLL_INTERVAL_MS: "3000", SEF_DATA_DIR: "/from/env" }, flags: { dataDir: "/from/flag" } });
    expect(config.pollIntervalMs).toBe(3000);
    expect(config.dataDir).toBe("/from/flag");
    expect(config.apiVersion).toBe("2019-08-01");
  });

  it("reads the sink list from SEF_SINKS", () => {
    expect(loadConfig({ env: { SEF_SINKS: "stdout, jsonl:/tmp/x.jsonl" } }).config.sinks).toEqual(["stdout", "jsonl:/tmp/x.jsonl"]);
  });

  it("names every bad field at once", () => {
    const found = problems(() => loadConfig({ file: file({ pollIntervalMs: 50, imdsUrl: "ftp://x", sinks: [] }), env: {} }));
    expect(found.some((p) => p.startsWith("pollIntervalMs:"))).toBe(true);
    expect(found.some((p) => p.startsWith("imdsUrl:"))).toBe(true);
    expect(found.some((p) => p.startsWith("sinks:"))).toBe(true);
  });

  it("rejects unknown settings, unknown sinks and missing sink arguments", () => {
    const found = problems(() => loadConfig({ file: file({ pollIntervalMS: 1000, sinks: ["kafka", "jsonl"] }), env: {} }));
    expect(found).toContain("pollIntervalMS: unknown setting");
    expect(found.some((p) => p.startsWith("sinks[0]:") && p.includes("unknown sink"))).toBe(true);
    expect(found.some((p) => p.startsWith("sinks[1]:") && p.includes("needs an argument"))).toBe(true);
  });

  it("explains an unreadable or invalid file", () => {
    expect(problems(() => loadConfig({ file: "/nonexistent/sef.json", env: {} }))[0]).toMatch(/cannot be read/);
    expect(problems(() => loadConfig({ file: file("{ not json"), env: {} }))[0]).toMatch(/not valid JSON/);
  });

  it("rejects a non-numeric number variable by name", () => {
    expect(problems(() => loadConfig({ env: { SEF_POLL_INTERVAL_MS: "fast" } }))).toContain('SEF_POLL_INTERVAL_MS: expected a number, got "fast"');
  });
});
