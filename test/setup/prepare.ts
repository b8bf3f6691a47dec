// `npm test`'s set-up step, run before typecheck, lint, build and vitest: makes sure the Debian tools the tests use are
// there (installs them with apt-get when root on Debian/Ubuntu, else stops at once naming the command to run), then
// makes sure the package tests' artifacts are current (built once into .package-cache/, reused while the inputs are
// unchanged; skipped when SEF_TEST_PACKAGE_DIR names prebuilt ones). `--tools-only` stops after the tools;
// `--artifacts-in-background` (npm test) starts the artifacts' build and returns; `--artifacts-only` is that build.
import { spawn, spawnSync } from "node:child_process";
import { closeSync, mkdirSync, openSync } from "node:fs";
import { setPriority } from "node:os";
import { fileURLToPath } from "node:url";
import { dirname, relative, resolve } from "node:path";
import { installCommand, missingPackages, onPath, type SystemPackage } from "./system-tools.js";
import { ensurePwsh } from "./pwsh.js";
import { ensureBicepCli } from "./bicep-cli.js";

const aptLockTimeoutS = 600;

function say(line: string): void {
  process.stdout.write(`prepare: ${line}\n`);
}

function apt(args: readonly string[]): boolean {
  const run = spawnSync("apt-get", ["-o", `DPkg::Lock::Timeout=${aptLockTimeoutS}`, ...args], {
    stdio: ["ignore", "inherit", "inherit"],
    env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
  });
  return run.status === 0;
}

function listPackages(packages: readonly SystemPackage[]): string {
  return packages.map((p) => `  ${p.name}: ${p.usedBy}`).join("\n");
}

/** Returns 0 when every tool is there (after installing what was missing, when allowed), else a non-zero exit code. */
export function ensureSystemTools(): number {
  const missing = missingPackages();
  if (missing.length === 0) {
    say("Debian tools: all present");
    return 0;
  }
  const canInstall = process.getuid?.() === 0 && onPath("apt-get");
  if (!canInstall) {
    process.stderr.write(
      `prepare: the tests need these Debian packages, which are missing:\n${listPackages(missing)}\n` +
        `Install them (as root), then run npm test again:\n  ${installCommand(missing)}\n`,
    );
    return 1;
  }
  say(`Debian tools: installing ${missing.map((p) => p.name).join(" ")} (apt-get update, then install)`);
  if (
    !apt(["update", "-qq"]) ||
    !apt(["install", "-y", "-qq", "--no-install-recommends", ...missing.map((p) => p.name)])
  ) {
    process.stderr.write(
      `prepare: apt-get failed; install these yourself, then run npm test again:\n  ${installCommand(missing)}\n`,
    );
    return 1;
  }
  const still = missingPackages();
  if (still.length > 0) {
    process.stderr.write(`prepare: still missing after apt-get install:\n${listPackages(still)}\n`);
    return 1;
  }
  say("Debian tools: installed");
  return 0;
}

/**
 * Starts building the package tests' artifacts in a process of its own, at a lower priority, and returns at once:
 * typecheck, lint and the other tests run meanwhile, and the package tests wait for the set (test/package/artifacts.ts).
 * Its output goes to .package-cache/build.log; it ends with the set in place, or with the error in that log.
 */
async function buildArtifactsInBackground(): Promise<void> {
  const { backgroundBuildLog, claimBuild, currentTestArtifactsIfReady, inputsStamp } =
    await import("../package/artifacts.js");
  if (currentTestArtifactsIfReady(say) !== undefined) return;
  mkdirSync(dirname(backgroundBuildLog), { recursive: true });
  const log = openSync(backgroundBuildLog, "w");
  const child = spawn(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), "--artifacts-only"], {
    stdio: ["ignore", log, log],
  });
  closeSync(log);
  claimBuild(inputsStamp(), child.pid!);
  setPriority(child.pid!, 10);
  child.unref();
  say(
    `package artifacts: building in the background at a lower priority (pid ${child.pid}, log ${relative(process.cwd(), backgroundBuildLog)}); the package tests wait for them`,
  );
}

async function main(args: readonly string[]): Promise<number> {
  const artifactsOnly = args.includes("--artifacts-only");
  const tools = artifactsOnly ? 0 : ensureSystemTools() || ensurePwsh() || ensureBicepCli(say);
  if (tools !== 0 || args.includes("--tools-only")) return tools;
  if (process.env.SEF_TEST_PACKAGE_DIR !== undefined) {
    say(`package artifacts: using SEF_TEST_PACKAGE_DIR=${process.env.SEF_TEST_PACKAGE_DIR}`);
    return 0;
  }
  if (args.includes("--artifacts-in-background")) {
    await buildArtifactsInBackground();
    return 0;
  }
  // Imported here: the packaging code needs the tools checked above.
  const { currentTestArtifacts } = await import("../package/artifacts.js");
  await currentTestArtifacts(say);
  return 0;
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = await main(process.argv.slice(2));
}
