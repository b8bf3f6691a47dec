// npm test's set-up step on a machine where it may not install anything (here: no apt-get and no tools on PATH): it
// stops at once, non-zero, naming the one apt-get command that installs exactly what is missing; without the .NET SDK,
// the PowerShell step names the SDK and the one dotnet command that installs pwsh, and the Bicep CLI's restore names
// the .NET SDK's install step.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { repoRoot } from "../package/artifacts.js";
import { ensurePwsh, pwshInstallCommand, pwshVersion } from "./pwsh.js";
import { installCommand, systemPackages } from "./system-tools.js";
import { bicepCliRestored, bicepVersion, dotnetInstallStep, ensureBicepCli, restoreProject } from "./bicep-cli.js";

const emptyBin = mkdtempSync(join(tmpdir(), "sef-empty-path-"));
afterAll(() => rmSync(emptyBin, { recursive: true, force: true }));

describe("test/setup/prepare.ts", () => {
  it("without the tools and without apt-get: exits 1 at once naming the apt-get install command", () => {
    const startedMs = performance.now();
    const run = spawnSync(process.execPath, ["--import", "tsx", join(repoRoot, "test/setup/prepare.ts")], {
      cwd: repoRoot,
      env: { ...process.env, PATH: emptyBin },
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(run.status, run.stderr).toBe(1);
    expect(performance.now() - startedMs).toBeLessThan(30_000);
    // Every package that provides a command is missing on this PATH (the Python ones are checked by Debian's own
    // /usr/bin/python3, so they are missing or not depending on the machine).
    const commandPackages = systemPackages.filter((p) => p.commands !== undefined);
    const named = /^ {2}(apt-get install .*)$/m.exec(run.stderr)?.[1] ?? "";
    expect(named.startsWith(installCommand(commandPackages)), run.stderr).toBe(true);
    for (const p of commandPackages) expect(run.stderr).toContain(`  ${p.name}: ${p.usedBy}`);
    expect(run.stdout).not.toContain("installing");
    expect(run.stdout).not.toContain("package artifacts");
  });

  it("without dotnet on PATH: the PowerShell step installs nothing and names the .NET SDK and the pwsh install command", () => {
    const toolDir = join(emptyBin, "tools", "pwsh");
    const said: string[] = [];
    let complaint = "";
    const code = ensurePwsh({ toolDir, path: emptyBin, say: (l) => said.push(l), complain: (t) => (complaint += t) });
    expect(code).toBe(1);
    expect(said).toEqual([]);
    expect(complaint).toContain(`PowerShell ${pwshVersion} (pwsh), a .NET tool`);
    expect(complaint).toContain("Install the .NET SDK");
    expect(complaint).toContain(`\n  dotnet tool install PowerShell --version ${pwshVersion} --tool-path ${toolDir}\n`);
    expect(pwshInstallCommand(toolDir)).toBe(`dotnet tool install PowerShell --version 7.6.10 --tool-path ${toolDir}`);
  });
});

describe("test/setup/bicep-cli.ts", () => {
  const emptyTools = mkdtempSync(join(tmpdir(), "sef-empty-tools-"));
  afterAll(() => rmSync(emptyTools, { recursive: true, force: true }));

  it("without dotnet and without a restored CLI: returns 1 at once naming the .NET SDK install step", () => {
    const said: string[] = [];
    let warned = "";
    const status = ensureBicepCli((line) => said.push(line), {
      path: emptyBin,
      root: emptyTools,
      warn: (text) => (warned += text),
    });
    expect(status).toBe(1);
    expect(warned).toContain(`Bicep CLI ${bicepVersion}`);
    expect(warned).toContain(`  ${dotnetInstallStep}\n`);
    expect(dotnetInstallStep).toMatch(/^apt-get install -y dotnet-sdk-\d+\.\d+ /);
    expect(said).toEqual([]);
    expect(bicepCliRestored(emptyTools)).toBe(false);
  });

  it("the restore project downloads exactly the pinned package for the SDK's framework", () => {
    const project = restoreProject("net10.0");
    expect(project).toContain("<TargetFramework>net10.0</TargetFramework>");
    expect(project).toContain(`<PackageDownload Include="Azure.Bicep.CommandLine.linux-x64" Version="[0.49.2]" />`);
  });
});
