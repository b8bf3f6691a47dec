// Which V8 flags the launchers give `sef run` (issue 22 item 6): idle RSS and the drain time of a 10,000-record backlog
// of the bundled agent (esbuild, as `npm run package` makes it) on this Node, for each candidate command line.
// `npx tsx test/bench/v8-flags.ts [idleSeconds] [rounds]`; the variants alternate within a round. SEF_V8_VARIANTS=held,tiers
// picks variants; idleSeconds 0 skips the idle measurement.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bundleAgent } from "../../infra/package/bundle.js";
import { startSimulator } from "../../src/testbed/simulator/server.js";
import { openOutbox } from "../helpers/outbox.js";
import { heartbeatRecord } from "../helpers/records.js";
import { repoRoot } from "../package/artifacts.js";

const variants: Readonly<Record<string, readonly string[]>> = {
  held: ["--optimize-for-size", "--liftoff-only", "--no-maglev", "--no-turbofan"],
  tiers: ["--optimize-for-size", "--liftoff-only"],
  none: [],
};

const rssMb = (pid: number): number =>
  Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) / 1024;
const lines = (file: string): number =>
  existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean).length : 0;

async function idleRss(sef: string, flags: readonly string[], dir: string, idleSeconds: number): Promise<number> {
  const sim = await startSimulator({ scenario: "idle" });
  const agent = spawn(
    process.execPath,
    [
      ...flags,
      sef,
      "run",
      "--imds-url",
      sim.url,
      "--poll-interval-ms",
      "1000",
      "--data-dir",
      join(dir, "data"),
      "--sink",
      `jsonl:${join(dir, "out.jsonl")}`,
      "--metrics-port",
      "0",
      "--log-level",
      "warn",
    ],
    { stdio: "ignore" },
  );
  await new Promise((r) => setTimeout(r, idleSeconds * 1000));
  const mb = rssMb(agent.pid!);
  agent.kill("SIGTERM");
  await new Promise((r) => agent.once("exit", r));
  await sim.close();
  return mb;
}

async function drainMs(sef: string, flags: readonly string[], dir: string, records: number): Promise<number> {
  const out = join(dir, "out.jsonl");
  const outbox = openOutbox({ dataDir: join(dir, "data"), maxOutboxBytes: 1 << 30 });
  outbox.registerSinks([`jsonl:${out}`]);
  outbox.append(
    Array.from({ length: records }, (_, i) => heartbeatRecord(i, { tag: "backlog" })),
    Date.now(),
  );
  outbox.close();
  const sim = await startSimulator({ scenario: "idle" });
  const started = performance.now();
  const agent = spawn(
    process.execPath,
    [
      ...flags,
      sef,
      "run",
      "--imds-url",
      sim.url,
      "--poll-interval-ms",
      "1000",
      "--data-dir",
      join(dir, "data"),
      "--sink",
      `jsonl:${out}`,
      "--heartbeat-interval-ms",
      "0",
      "--metrics-port",
      "0",
      "--log-level",
      "warn",
    ],
    { stdio: "ignore" },
  );
  while (lines(out) < records && performance.now() - started < 120_000) await new Promise((r) => setTimeout(r, 20));
  const ms = Math.round(performance.now() - started);
  agent.kill("SIGTERM");
  await new Promise((r) => agent.once("exit", r));
  await sim.close();
  return ms;
}

const idleSeconds = Number(process.argv[2] ?? 20);
const rounds = Number(process.argv[3] ?? 2);
const scratch = mkdtempSync(join(tmpdir(), "sef-bench-v8-"));
try {
  await bundleAgent(repoRoot, join(scratch, "bundle"), "0.0.0-bench");
  const sef = join(scratch, "bundle", "sef.mjs");
  const results: Record<string, { idleRssMb: number[]; drain10kMs: number[] }> = {};
  for (let round = 0; round < rounds; round++) {
    const picked = process.env.SEF_V8_VARIANTS?.split(",") ?? Object.keys(variants);
    for (const [name, flags] of Object.entries(variants).filter(([name]) => picked.includes(name))) {
      const entry = (results[name] ??= { idleRssMb: [], drain10kMs: [] });
      entry.drain10kMs.push(await drainMs(sef, flags, mkdtempSync(join(scratch, `drain-${name}-`)), 10_000));
      if (idleSeconds > 0)
        entry.idleRssMb.push(
          Math.round((await idleRss(sef, flags, mkdtempSync(join(scratch, `idle-${name}-`)), idleSeconds)) * 10) / 10,
        );
      console.log(name, JSON.stringify(entry));
    }
  }
  console.log(JSON.stringify({ node: process.version, idleSeconds, results }, null, 2));
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
