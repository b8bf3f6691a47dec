// The agent and the testbed stay apart: a static import graph over src/ (the agent never imports src/testbed/, the
// testbed imports only src/contract/ from the agent) and the packaged bundle's inputs (no testbed code, no peers).
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bundleAgent, type BundleResult } from "../../infra/package/bundle.js";

const repoRoot = resolve(import.meta.dirname, "../..");
const srcRoot = join(repoRoot, "src");

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return tsFiles(path);
    return name.endsWith(".ts") ? [path] : [];
  });
}

/** Every module specifier a file imports statically, re-exports, or loads with `import()`. */
export function importSpecifiers(source: string): string[] {
  const specs: string[] = [];
  const patterns = [/\b(?:import|export)\s[^;'"]*?\bfrom\s*["']([^"']+)["']/g, /\bimport\s*["']([^"']+)["']/g, /\bimport\(\s*["']([^"']+)["']\s*\)/g];
  for (const pattern of patterns) for (const match of source.matchAll(pattern)) specs.push(match[1]!);
  return specs;
}

/** src-relative paths of the repository files a module imports (package imports are left out). */
function localImports(file: string): string[] {
  return importSpecifiers(readFileSync(file, "utf8"))
    .filter((spec) => spec.startsWith("."))
    .map((spec) => relative(srcRoot, resolve(dirname(file), spec)).replace(/\.js$/, ".ts"));
}

describe("import graph of src/", () => {
  const files = tsFiles(srcRoot);
  const graph = new Map(files.map((f) => [relative(srcRoot, f), localImports(f)]));

  it("finds imports of every form (so the checks below can fail)", () => {
    expect(importSpecifiers(`import { a } from "./a.js";\nexport * from "../b.js";\nimport "./c.js";\nconst d = await import("./d.js");\nimport type {\n  E,\n} from "./e.js";`))
      .toEqual(expect.arrayContaining(["./a.js", "../b.js", "./c.js", "./d.js", "./e.js"]));
    expect(graph.get("testbed/cli.ts")?.length).toBeGreaterThan(0);
  });

  it("the agent never imports the testbed", () => {
    const offenders = [...graph].filter(([file]) => !file.startsWith("testbed/")).flatMap(([file, deps]) => deps.filter((d) => d.startsWith("testbed/")).map((d) => `${file} → ${d}`));
    expect(offenders).toEqual([]);
  });

  it("the testbed imports nothing of the agent but src/contract/", () => {
    const offenders = [...graph]
      .filter(([file]) => file.startsWith("testbed/"))
      .flatMap(([file, deps]) => deps.filter((d) => !d.startsWith("testbed/") && !d.startsWith("contract/")).map((d) => `${file} → ${d}`));
    expect(offenders).toEqual([]);
  });
});

describe("the packaged bundle (esbuild, as `npm run package` makes it)", () => {
  const outDir = mkdtempSync(join(tmpdir(), "sef-bundle-"));
  let bundle: BundleResult;
  beforeAll(async () => {
    bundle = await bundleAgent(repoRoot, outDir, "9.8.7-test");
  });
  afterAll(() => rmSync(outDir, { recursive: true, force: true }));

  it("carries the agent and no testbed code", () => {
    expect(bundle.inputs).toContain("src/agent/cli/main.ts");
    expect(bundle.inputs).toContain("src/agent/sinks/eventhubs/index.ts");
    expect(bundle.inputs.filter((i) => i.startsWith("src/testbed/"))).toEqual([]);
    expect(bundle.inputs.filter((i) => /node_modules\/(selfsigned|vitest|tsx|typescript|fast-check)\//.test(i))).toEqual([]);
    const text = bundle.files.map((f) => readFileSync(join(outDir, f), "utf8")).join("\n");
    expect(text).not.toContain("sef-testbed");
    expect(text).not.toContain("__sim/");
  });

  it("takes from rhea only what @azure/event-hubs reaches through rhea-promise (no AMQP listener of its own)", () => {
    const rhea = bundle.inputs.filter((i) => i.includes("node_modules/rhea/"));
    expect(rhea.length).toBeGreaterThan(0);
    expect(bundle.inputs.some((i) => i.includes("node_modules/rhea-promise/"))).toBe(true);
    const agentSources = bundle.inputs.filter((i) => i.startsWith("src/")).map((i) => readFileSync(join(repoRoot, i), "utf8"));
    expect(agentSources.flatMap(importSpecifiers).filter((s) => s === "rhea" || s.startsWith("rhea/"))).toEqual([]);
  });

  it("is the same bytes when built again from the same inputs", async () => {
    const again = mkdtempSync(join(tmpdir(), "sef-bundle-again-"));
    try {
      const second = await bundleAgent(repoRoot, again, "9.8.7-test");
      expect(second.files).toEqual(bundle.files);
      for (const file of bundle.files) expect(readFileSync(join(again, file)).equals(readFileSync(join(outDir, file))), file).toBe(true);
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
  function runBundle(args: string[], env: NodeJS.ProcessEnv = {}): { status: number | null; stdout: string; loaded: string[] } {
    const scratch = mkdtempSync(join(tmpdir(), "sef-bundle-run-"));
    try {
      const hooks = join(scratch, "hooks.mjs");
      const log = join(scratch, "loaded.txt");
      writeFileSync(hooks, `import { registerHooks } from "node:module"; import { appendFileSync } from "node:fs";
registerHooks({ load(url, context, next) { appendFileSync(${JSON.stringify(log)}, url + "\\n"); return next(url, context); } });
process.on("exit", () => appendFileSync(${JSON.stringify(log)}, process.moduleLoadList.filter((m) => m.startsWith("NativeModule ")).map((m) => "node:" + m.slice(13)).join("\\n") + "\\n"));`);
      const run = spawnSync(process.execPath, ["--import", hooks, join(outDir, "sef.mjs"), ...args], {
        encoding: "utf8",
        timeout: 15_000,
        env: { PATH: process.env.PATH, HOME: scratch, NODE_COMPILE_CACHE: "", ...env },
      });
      return { status: run.status, stdout: run.stdout, loaded: existsSync(log) ? readFileSync(log, "utf8").split("\n").filter(Boolean) : [] };
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  }
  const commandChunk = (name: string) => new RegExp(`/chunks/${name}-[A-Z0-9]+\\.mjs$`);

  it("sef --version loads no command module, no store and no HTTP; check-config loads neither run, tail nor fleet", () => {
    const version = runBundle(["--version"]);
    expect(version.status).toBe(0);
    expect(version.stdout.trim()).toBe("9.8.7-test");
    expect(version.loaded.some((u) => commandChunk("program").test(u))).toBe(true); // the hook sees the chunks
    for (const name of ["run", "check-config", "tail", "fleet", "discover", "ledger"]) expect(version.loaded.filter((u) => commandChunk(name).test(u)), name).toEqual([]);
    expect(version.loaded.filter((u) => ["node:sqlite", "node:http", "node:worker_threads"].includes(u))).toEqual([]);

    const dir = mkdtempSync(join(tmpdir(), "sef-check-config-"));
    try {
      writeFileSync(join(dir, "config.json"), JSON.stringify({ sinks: ["stdout"], dataDir: join(dir, "data") }));
      const check = runBundle(["check-config", "--config", join(dir, "config.json")]);
      expect(check.status).toBe(0);
      expect(check.loaded.some((u) => commandChunk("check-config").test(u))).toBe(true);
      for (const name of ["run", "tail", "fleet"]) expect(check.loaded.filter((u) => commandChunk(name).test(u)), name).toEqual([]);
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
