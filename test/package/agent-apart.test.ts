// The agent's packaged bundle carries the agent alone: no testbed or fleet code, no Blob SDK, no AMQP listener or TLS
// test library (which package may import what is test/package/package-imports.test.ts; this checks what esbuild took).
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bundleAgent, type BundleResult } from "../../infra/package/bundle.js";

const repoRoot = resolve(import.meta.dirname, "../..");

/** Every module specifier a file imports statically, re-exports, or loads with `import()`. */
export function importSpecifiers(source: string): string[] {
  const specs: string[] = [];
  const patterns = [
    /\b(?:import|export)\s[^;'"]*?\bfrom\s*["']([^"']+)["']/g,
    /\bimport\s*["']([^"']+)["']/g,
    /\bimport\(\s*["']([^"']+)["']\s*\)/g,
  ];
  for (const pattern of patterns) for (const match of source.matchAll(pattern)) specs.push(match[1]!);
  return specs;
}

describe("the packaged bundle (esbuild, as `npm run package` makes it)", () => {
  const outDir = mkdtempSync(join(tmpdir(), "sef-bundle-"));
  let bundle: BundleResult;
  beforeAll(async () => {
    bundle = await bundleAgent(repoRoot, outDir, "9.8.7-test");
  });
  afterAll(() => rmSync(outDir, { recursive: true, force: true }));

  it("carries the agent and no testbed or fleet code, no Blob SDK", () => {
    expect(bundle.inputs).toContain("src/agent/cli/main.ts");
    expect(bundle.inputs).toContain("src/agent/sinks/eventhubs/index.ts");
    expect(bundle.inputs.filter((i) => i.startsWith("src/testbed/") || i.startsWith("src/fleet/"))).toEqual([]);
    expect(
      bundle.inputs.filter((i) =>
        /node_modules\/(selfsigned|vitest|tsx|typescript|fast-check|@azure\/storage-blob|@azure\/eventhubs-checkpointstore-blob)\//.test(
          i,
        ),
      ),
    ).toEqual([]);
    const text = bundle.files.map((f) => readFileSync(join(outDir, f), "utf8")).join("\n");
    expect(text).not.toContain("sef-testbed");
    expect(text).not.toContain("__sim/");
  });

  it("never changes V8's flags at run time: they are the launchers' (test/integration/launcher-v8-flags.test.ts)", () => {
    const text = bundle.files.map((f) => readFileSync(join(outDir, f), "utf8")).join("\n");
    expect(text).toContain("createRequire"); // the bundle's text is really read
    expect(text).not.toContain("setFlagsFromString");
  });

  it("never asks ICU to compare or format: the first localeCompare or Intl call keeps ~2.5 MB of collation data resident", () => {
    const agentSources = bundle.inputs.filter((i) => i.startsWith("src/"));
    expect(agentSources.some((i) => i.endsWith("collector/transitions.ts"))).toBe(true); // the sorting modules are in it
    const callers = agentSources.filter((i) =>
      /\.localeCompare\(|\bIntl\./.test(readFileSync(join(repoRoot, i), "utf8")),
    );
    expect(callers).toEqual([]);
  });

  it("takes from rhea only what @azure/event-hubs reaches through rhea-promise (no AMQP listener of its own)", () => {
    const rhea = bundle.inputs.filter((i) => i.includes("node_modules/rhea/"));
    expect(rhea.length).toBeGreaterThan(0);
    expect(bundle.inputs.some((i) => i.includes("node_modules/rhea-promise/"))).toBe(true);
    const agentSources = bundle.inputs
      .filter((i) => i.startsWith("src/"))
      .map((i) => readFileSync(join(repoRoot, i), "utf8"));
    expect(agentSources.flatMap(importSpecifiers).filter((s) => s === "rhea" || s.startsWith("rhea/"))).toEqual([]);
  });

  it("is the same bytes when built again from the same inputs", async () => {
    const again = mkdtempSync(join(tmpdir(), "sef-bundle-again-"));
    try {
      const second = await bundleAgent(repoRoot, again, "9.8.7-test");
      expect(second.files).toEqual(bundle.files);
      for (const file of bundle.files)
        expect(readFileSync(join(again, file)).equals(readFileSync(join(outDir, file))), file).toBe(true);
    } finally {
      rmSync(again, { recursive: true, force: true });
    }
  });

  it("stamps the version given at build time and keeps the Azure SDKs in lazily loaded chunks", () => {
    const entry = readFileSync(join(outDir, "sef.mjs"), "utf8");
    // The version constant sits in the entry or in a chunk the entry loads statically (code shared by several commands).
    const all = bundle.files.map((f) => readFileSync(join(outDir, f), "utf8")).join("\n");
    expect(all).toContain('"9.8.7-test"');
    expect(entry).not.toContain("package.json");
    expect(entry).not.toMatch(/@azure\/event-hubs|EventHubProducerClient/);
    expect(bundle.files.some((f) => f.startsWith("chunks/"))).toBe(true);
  });

  /** Runs the bundle with a loader hook that lists every module it loads (file URLs and node: built-ins). */
  function runBundle(
    args: string[],
    env: NodeJS.ProcessEnv = {},
  ): { status: number | null; stdout: string; loaded: string[] } {
    const scratch = mkdtempSync(join(tmpdir(), "sef-bundle-run-"));
    try {
      const hooks = join(scratch, "hooks.mjs");
      const log = join(scratch, "loaded.txt");
      writeFileSync(
        hooks,
        `import { registerHooks } from "node:module"; import { appendFileSync } from "node:fs";
registerHooks({ load(url, context, next) { appendFileSync(${JSON.stringify(log)}, url + "\\n"); return next(url, context); } });
process.on("exit", () => appendFileSync(${JSON.stringify(log)}, process.moduleLoadList.filter((m) => m.startsWith("NativeModule ")).map((m) => "node:" + m.slice(13)).join("\\n") + "\\n"));`,
      );
      const run = spawnSync(process.execPath, ["--import", hooks, join(outDir, "sef.mjs"), ...args], {
        encoding: "utf8",
        timeout: 15_000,
        env: { PATH: process.env.PATH, HOME: scratch, NODE_COMPILE_CACHE: "", ...env },
      });
      return {
        status: run.status,
        stdout: run.stdout,
        loaded: existsSync(log) ? readFileSync(log, "utf8").split("\n").filter(Boolean) : [],
      };
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  }
  const commandChunk = (name: string) => new RegExp(`/chunks/${name}-[A-Z0-9]+\\.mjs$`);

  it("sef --version loads no command module, no store and no HTTP; check-config loads neither run nor tail", () => {
    const version = runBundle(["--version"]);
    expect(version.status).toBe(0);
    expect(version.stdout.trim()).toBe("9.8.7-test");
    expect(version.loaded.some((u) => commandChunk("program").test(u))).toBe(true); // the hook sees the chunks
    for (const name of ["run", "check-config", "tail", "discover", "ledger"])
      expect(
        version.loaded.filter((u) => commandChunk(name).test(u)),
        name,
      ).toEqual([]);
    expect(version.loaded.filter((u) => ["node:sqlite", "node:http", "node:worker_threads"].includes(u))).toEqual([]);

    const dir = mkdtempSync(join(tmpdir(), "sef-check-config-"));
    try {
      writeFileSync(join(dir, "config.json"), JSON.stringify({ sinks: ["stdout"], dataDir: join(dir, "data") }));
      const check = runBundle(["check-config", "--config", join(dir, "config.json")]);
      expect(check.status).toBe(0);
      expect(check.loaded.some((u) => commandChunk("check-config").test(u))).toBe(true);
      for (const name of ["run", "tail"])
        expect(
          check.loaded.filter((u) => commandChunk(name).test(u)),
          name,
        ).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("keeps Node's compile cache in systemd's CacheDirectory, and starts without one where none can be made", () => {
    const cache = mkdtempSync(join(tmpdir(), "sef-cache-dir-"));
    try {
      expect(runBundle(["--version"], { CACHE_DIRECTORY: cache }).status).toBe(0);
      const versions = readdirSync(join(cache, "compile-cache"));
      expect(versions.length).toBe(1);
      expect(readdirSync(join(cache, "compile-cache", versions[0]!)).length).toBeGreaterThan(0);
    } finally {
      rmSync(cache, { recursive: true, force: true });
    }
    // A HOME where no directory can be made (Node's own recursive mkdir never returns under /proc).
    const started = performance.now();
    const unusable = runBundle(["--version"], { HOME: "/proc" });
    expect(unusable.status).toBe(0);
    expect(unusable.stdout.trim()).toBe("9.8.7-test");
    expect(performance.now() - started).toBeLessThan(10_000);
  });
});
