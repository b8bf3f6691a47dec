// The pinned Bicep CLI the deploy tests compile and lint with: Microsoft's NuGet package, restored by `dotnet restore`
// of a generated PackageDownload project into the git-ignored .tools/ of the checkout, and reused while it is there.
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { onPath } from "./system-tools.js";

export const bicepPackage = "Azure.Bicep.CommandLine.linux-x64";
export const bicepVersion = "0.49.2";

const repoRoot = resolve(import.meta.dirname, "../..");
/** Where the set-up step keeps the tools it restores (git-ignored). */
export const toolsDir = join(repoRoot, ".tools");
const packagesDir = (root: string): string => join(root, "nuget");
const packageDir = (root: string): string => join(packagesDir(root), bicepPackage.toLowerCase(), bicepVersion);
/** The bicep executable under a tools folder. */
const cliUnder = (root: string): string => join(packageDir(root), "tools", "bicep");
/** The bicep executable the tests run. */
export const bicepCliPath = cliUnder(toolsDir);
/** NuGet writes this file last: a package folder without it is an interrupted restore. */
const restoredMarker = (root: string): string => join(packageDir(root), ".nupkg.metadata");
const restoreTimeoutMs = 15 * 60_000;

/** What a machine without dotnet is told to run (the SDK is not a Debian package: Ubuntu's archive or Microsoft's). */
export const dotnetInstallStep =
  "apt-get install -y dotnet-sdk-8.0   # or any later .NET SDK: Ubuntu's archive, or Microsoft's package repository on Debian";

/** The restore project: downloads exactly the pinned package, nothing to build. */
export function restoreProject(targetFramework: string): string {
  return [
    '<Project Sdk="Microsoft.NET.Sdk">',
    "  <PropertyGroup>",
    `    <TargetFramework>${targetFramework}</TargetFramework>`,
    "  </PropertyGroup>",
    "  <ItemGroup>",
    `    <PackageDownload Include="${bicepPackage}" Version="[${bicepVersion}]" />`,
    "  </ItemGroup>",
    "</Project>",
    "",
  ].join("\n");
}

const dotnetEnv = (): NodeJS.ProcessEnv => ({
  ...process.env,
  DOTNET_CLI_TELEMETRY_OPTOUT: "1",
  DOTNET_NOLOGO: "1",
  DOTNET_SKIP_FIRST_TIME_EXPERIENCE: "1",
});

/** The SDK's own framework (net<major>.0), so the restore needs no other targeting pack. */
function sdkTargetFramework(): string | undefined {
  const run = spawnSync("dotnet", ["--version"], { encoding: "utf8", env: dotnetEnv(), timeout: 120_000 });
  const major = /^(\d+)\./.exec(run.stdout ?? "")?.[1];
  return run.status === 0 && major !== undefined ? `net${major}.0` : undefined;
}

/** Whether the pinned Bicep CLI is restored in a tools folder (.tools/). */
export function bicepCliRestored(root: string = toolsDir): boolean {
  return existsSync(restoredMarker(root)) && existsSync(cliUnder(root));
}

export interface EnsureOptions {
  /** PATH to find dotnet on. */
  readonly path?: string;
  /** The tools folder (.tools/ of the checkout). */
  readonly root?: string;
  /** Where the reason and the step to take go (stderr). */
  readonly warn?: (text: string) => void;
}

/**
 * Makes sure the pinned Bicep CLI is in .tools/ (restoring it with dotnet when missing). Returns 0 when it is there,
 * else 1 after writing what to do to stderr.
 */
export function ensureBicepCli(say: (line: string) => void, options: EnsureOptions = {}): number {
  const { path = process.env.PATH ?? "", root = toolsDir, warn = (text) => process.stderr.write(text) } = options;
  if (bicepCliRestored(root)) {
    say(`Bicep CLI ${bicepVersion}: present (.tools/)`);
    return 0;
  }
  const framework = onPath("dotnet", path) ? sdkTargetFramework() : undefined;
  if (framework === undefined) {
    warn(
      `prepare: the deploy tests need the Bicep CLI ${bicepVersion}, restored with dotnet (the .NET SDK), which is ` +
        `missing.\nInstall the .NET SDK (as root), then run npm test again:\n  ${dotnetInstallStep}\n`,
    );
    return 1;
  }
  const projectDir = join(root, "bicep-restore");
  mkdirSync(projectDir, { recursive: true });
  const project = join(projectDir, "bicep-restore.csproj");
  writeFileSync(project, restoreProject(framework));
  say(`Bicep CLI ${bicepVersion}: restoring ${bicepPackage} with dotnet into .tools/ (about a minute the first time)`);
  const run = spawnSync("dotnet", ["restore", project, "--packages", packagesDir(root), "--verbosity", "quiet"], {
    stdio: ["ignore", "inherit", "inherit"],
    env: { ...dotnetEnv(), PATH: path },
    timeout: restoreTimeoutMs,
  });
  if (run.status !== 0 || !bicepCliRestored(root)) {
    warn(
      `prepare: dotnet restore of ${bicepPackage} ${bicepVersion} failed (exit ${run.status ?? run.signal}); ` +
        `run it yourself: dotnet restore ${project} --packages ${packagesDir(root)}\n`,
    );
    return 1;
  }
  chmodSync(cliUnder(root), 0o755);
  say(`Bicep CLI ${bicepVersion}: restored`);
  return 0;
}
