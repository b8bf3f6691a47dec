// V8's flags for `sef run` are fixed on the launchers' command lines (issue 22 item 6: Node documents changing them
// after start-up as unsupported): bin/sef, the Windows service launcher and the container entry point give node the
// same flags, and nothing in the agent calls v8.setFlagsFromString. The launchers run for real here, on a stand-in
// bundle that prints the flags node was started with.
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
  copyFileSync,
  chmodSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { runProcess } from "../helpers/run-process.js";

const repoRoot = resolve(import.meta.dirname, "../..");

/** What `sef run` gets: the V8 settings chosen by measurement (see src/agent/cli/README.md, "V8 flags"). */
const runFlags = ["--optimize-for-size", "--liftoff-only", "--no-maglev", "--no-turbofan"];

/** A stand-in for sef.mjs: prints the flags node was started with and the arguments it was given. */
const printer = "console.log(JSON.stringify({ execArgv: process.execArgv, argv: process.argv.slice(2) }));\n";

function parsed(stdout: string): { execArgv: string[]; argv: string[] } {
  return JSON.parse(stdout.trim().split("\n").at(-1)!) as { execArgv: string[]; argv: string[] };
}

describe("the launchers give node the V8 flags on its command line", () => {
  it("bin/sef (infra/linux/sef): the flags for `run`, none for other commands", async () => {
    const top = mkdtempSync(join(tmpdir(), "sef-launcher-linux-"));
    mkdirSync(join(top, "bin"));
    mkdirSync(join(top, "lib", "sef"), { recursive: true });
    copyFileSync(join(repoRoot, "infra/linux/sef"), join(top, "bin", "sef"));
    chmodSync(join(top, "bin", "sef"), 0o755);
    symlinkSync(process.execPath, join(top, "lib", "sef", "node"));
    writeFileSync(join(top, "lib", "sef", "sef.mjs"), printer);

    const run = await runProcess(join(top, "bin", "sef"), ["run", "--config", "x.json"], 20_000);
    expect(run.code, run.stderr).toBe(0);
    expect(parsed(run.stdout)).toEqual({ execArgv: runFlags, argv: ["run", "--config", "x.json"] });
    const version = await runProcess(join(top, "bin", "sef"), ["--version"], 20_000);
    expect(parsed(version.stdout)).toEqual({ execArgv: [], argv: ["--version"] });
  });

  it("the Windows service launcher (infra/windows/sef-service.mjs): the flags for `run`, none for other commands", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sef-launcher-windows-"));
    copyFileSync(join(repoRoot, "infra/windows/sef-service.mjs"), join(dir, "sef-service.mjs"));
    writeFileSync(join(dir, "sef.mjs"), printer);
    const run = await runProcess(process.execPath, [join(dir, "sef-service.mjs"), "run", "--config", "x.json"], 20_000);
    expect(run.code, run.stderr).toBe(0);
    expect(parsed(run.stdout)).toEqual({ execArgv: runFlags, argv: ["run", "--config", "x.json"] });
    const check = await runProcess(process.execPath, [join(dir, "sef-service.mjs"), "check-config"], 20_000);
    expect(parsed(check.stdout)).toEqual({ execArgv: [], argv: ["check-config"] });
  });

  it("the container entry point (infra/container/Dockerfile) carries them (its CMD is `run`)", () => {
    const dockerfile = readFileSync(join(repoRoot, "infra/container/Dockerfile"), "utf8");
    const entrypoint = JSON.parse(/^ENTRYPOINT (\[.*\])$/m.exec(dockerfile)![1]!) as string[];
    expect(entrypoint).toEqual(["/opt/sef/node", ...runFlags, "/opt/sef/sef.mjs"]);
    expect(JSON.parse(/^CMD (\[.*\])$/m.exec(dockerfile)![1]!)[0]).toBe("run");
  });
});

describe("nothing in the agent changes V8's flags while it runs", () => {
  const files = (dir: string): string[] =>
    readdirSync(dir).flatMap((name) => {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) return name === "dist" ? [] : files(path);
      return name.endsWith(".ts") ? [path] : [];
    });

  it("no source file of the agent or the workspace packages it bundles calls setFlagsFromString", () => {
    const sources = ["agent", "contract", "retry", "errors", "redaction", "runtime"].flatMap((name) =>
      files(join(repoRoot, "src", name)),
    );
    expect(sources.length).toBeGreaterThan(50);
    expect(sources.filter((file) => /setFlagsFromString/.test(readFileSync(file, "utf8")))).toEqual([]);
  });
});
