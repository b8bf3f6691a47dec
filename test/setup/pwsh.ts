// PowerShell 7 (`pwsh`) for the tests that run the Windows scripts (infra/windows, infra/vmapp): Microsoft's own
// PowerShell as a .NET tool, installed by the .NET SDK's client into .tools/pwsh in the checkout and reused from there.
import { spawnSync } from "node:child_process";
import { existsSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { onPath } from "./system-tools.js";

/** The pinned PowerShell (7.7.0 does not install as a tool here). */
export const pwshVersion = "7.6.10";
const repoRoot = resolve(import.meta.dirname, "../..");
/** Where the tool is installed: git-ignored, inside the checkout. */
export const pwshToolDir = join(repoRoot, ".tools", "pwsh");
export const pwshPath = join(pwshToolDir, "pwsh");

/** The one command that installs the pinned pwsh into `toolDir`. */
export function pwshInstallCommand(toolDir = pwshToolDir): string {
  return `dotnet tool install PowerShell --version ${pwshVersion} --tool-path ${toolDir}`;
}

/** Whether the pinned version is installed in `toolDir` (the tool store's version folder; pwsh not started). */
export function pwshInstalled(toolDir = pwshToolDir): boolean {
  return (
    existsSync(join(toolDir, "pwsh")) && existsSync(join(toolDir, ".store", "powershell", pwshVersion, "powershell"))
  );
}

export interface EnsurePwshOptions {
  readonly toolDir?: string;
  readonly path?: string;
  readonly say?: (line: string) => void;
  readonly complain?: (text: string) => void;
}

/** Installs the pinned pwsh when it is not there; 0 when it is there, else 1 with the install step named. */
export function ensurePwsh(options: EnsurePwshOptions = {}): number {
  const toolDir = options.toolDir ?? pwshToolDir;
  const path = options.path ?? process.env.PATH ?? "";
  const say = options.say ?? ((line: string): void => void process.stdout.write(`prepare: ${line}\n`));
  const complain = options.complain ?? ((text: string): void => void process.stderr.write(text));
  if (pwshInstalled(toolDir)) {
    say(`PowerShell: pwsh ${pwshVersion} present (${toolDir})`);
    return 0;
  }
  if (!onPath("dotnet", path)) {
    complain(
      `prepare: the tests run the Windows scripts under PowerShell ${pwshVersion} (pwsh), a .NET tool, and need the ` +
        `.NET SDK's dotnet, which is not on PATH.\nInstall the .NET SDK (8 or later; e.g. ` +
        `apt-get install -y dotnet-sdk-10.0 from Microsoft's package repository), then run npm test again, or ` +
        `install pwsh yourself:\n  ${pwshInstallCommand(toolDir)}\n`,
    );
    return 1;
  }
  rmSync(toolDir, { recursive: true, force: true }); // another version, or a half-done install
  say(`PowerShell: installing pwsh ${pwshVersion} (${pwshInstallCommand(toolDir)})`);
  const startedMs = performance.now();
  const run = spawnSync("dotnet", ["tool", "install", "PowerShell", "--version", pwshVersion, "--tool-path", toolDir], {
    encoding: "utf8",
    env: { ...process.env, PATH: path, DOTNET_CLI_TELEMETRY_OPTOUT: "1", DOTNET_NOLOGO: "1" },
    timeout: 600_000,
  });
  if (run.status !== 0 || !pwshInstalled(toolDir)) {
    complain(
      `prepare: installing pwsh failed (exit ${run.status ?? run.signal}):\n${run.stdout}${run.stderr}` +
        `Run it yourself, then npm test again:\n  ${pwshInstallCommand(toolDir)}\n`,
    );
    return 1;
  }
  say(`PowerShell: pwsh ${pwshVersion} installed in ${Math.round((performance.now() - startedMs) / 1000)} s`);
  return 0;
}

/** The installed pwsh, installed first when a test file runs on its own before the set-up step ever did. */
export function pwsh(): string {
  if (!pwshInstalled() && ensurePwsh() !== 0) throw new Error(`pwsh is missing: ${pwshInstallCommand()}`);
  return pwshPath;
}
