// Runs the pinned Bicep CLI (test/setup/bicep-cli.ts restores it; a test run on its own restores it too): one process
// per command over every file (`--pattern`), commands run side by side, diagnostics parsed from its default format.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { bicepCliPath, ensureBicepCli } from "../../setup/bicep-cli.js";
import { repoRoot } from "./bicep.js";

const commandTimeoutMs = 540_000;

/** The environment the parameter files read (README: every-vm-mg.bicepparam's SEF_SUBSCRIPTION_ID). */
export const sampleEnvironment = { SEF_SUBSCRIPTION_ID: "00000000-0000-0000-0000-0000000000aa" };

export interface BicepRun {
  readonly args: readonly string[];
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface Diagnostic {
  /** Repository-relative path. */
  readonly file: string;
  readonly line: number;
  readonly level: "Error" | "Warning" | "Info";
  readonly code: string;
  readonly message: string;
}

/** The Bicep CLI's path, restoring it first when missing (throws with the set-up step's words when it cannot). */
export function bicepCli(): string {
  const lines: string[] = [];
  if (ensureBicepCli((line) => lines.push(line)) !== 0) throw new Error(`Bicep CLI missing: ${lines.join("; ")}`);
  return bicepCliPath;
}

/** Runs `bicep ARGS` in the checkout; resolves with its exit status and output (never rejects on a non-zero exit). */
export function runBicep(args: readonly string[], env: Record<string, string> = {}): Promise<BicepRun> {
  const cli = bicepCli();
  return new Promise((resolve, reject) => {
    const child = spawn(cli, args, {
      cwd: repoRoot,
      env: { ...process.env, ...sampleEnvironment, ...env, DOTNET_CLI_TELEMETRY_OPTOUT: "1" },
      stdio: ["ignore", "pipe", "pipe"],
      timeout: commandTimeoutMs,
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    child.on("error", reject);
    child.on("close", (status) => resolve({ args, status, stdout, stderr }));
  });
}

const diagnosticLine = /^(.+?)\((\d+),\d+\) : (Error|Warning|Info) ([\w-]+): (.*)$/;

/** The diagnostics in a run's output (`path(line,col) : Level CODE: message`), paths made repository-relative. */
export function diagnostics(output: string): Diagnostic[] {
  return output.split("\n").flatMap((line) => {
    const m = diagnosticLine.exec(line.trim());
    if (m === null) return [];
    return [
      {
        file: relative(repoRoot, m[1]!),
        line: Number(m[2]),
        level: m[3] as Diagnostic["level"],
        code: m[4]!,
        message: m[5]!.replace(/ \[https:\/\/aka\.ms\/[^\]]*\]$/, ""),
      },
    ];
  });
}

/** One line per diagnostic, for assertions that print what went wrong. */
export function describeDiagnostics(list: readonly Diagnostic[]): string[] {
  return list.map((d) => `${d.file}:${d.line} ${d.level} ${d.code}: ${d.message}`);
}

/** The repository-relative glob of every file with an extension under bicep/. */
export const bicepGlob = (extension: string): string => join("bicep", "**", `*${extension}`);

export interface Snapshot {
  readonly run: BicepRun;
  /** The resources the deployment would write, their expressions evaluated by the CLI's deployment engine. */
  readonly resources: readonly Record<string, unknown>[];
  readonly outputs: Record<string, unknown>;
}

/** Where a snapshot deploys: a management group, or a subscription's resource group. */
export const managementGroupScope = ["--management-group-id", "mg", "--location", "westeurope"];
export const resourceGroupScope = [
  "--subscription-id",
  sampleEnvironment.SEF_SUBSCRIPTION_ID,
  "--resource-group",
  "rg",
  "--location",
  "westeurope",
];

/**
 * Renders a template (repository-relative path) with `params` (`bicep snapshot`: Azure's template engine run locally):
 * what the deployment would PUT and its outputs, every function evaluated.
 */
export async function snapshot(
  template: string,
  params: Record<string, unknown>,
  scope: readonly string[],
): Promise<Snapshot> {
  const dir = mkdtempSync(join(tmpdir(), "sef-snapshot-"));
  try {
    const paramFile = join(dir, "sample.bicepparam");
    const lines = Object.entries(params).map(
      ([name, value]) => `param ${name} = json('${JSON.stringify(value).replace(/\\/g, "\\\\").replace(/'/g, "\\'")}')`,
    );
    writeFileSync(paramFile, [`using '${relative(dir, join(repoRoot, template))}'`, "", ...lines, ""].join("\n"));
    const run = await runBicep(["snapshot", paramFile, "--mode", "overwrite", ...scope]);
    const snapshotFile = join(dir, "sample.snapshot.json");
    const parsed = existsSync(snapshotFile)
      ? (JSON.parse(readFileSync(snapshotFile, "utf8")) as {
          predictedResources: Record<string, unknown>[];
          outputs?: Record<string, unknown>;
        })
      : { predictedResources: [], outputs: {} };
    return { run, resources: parsed.predictedResources, outputs: parsed.outputs ?? {} };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
