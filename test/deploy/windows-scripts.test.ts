// The Windows scripts run for real under Microsoft's PowerShell 7 (pwsh, npm test's set-up step installs it): install.ps1,
// the VM Application's vmapp.ps1 and the commands of infra/vmapp/commands.json, with the calls only Windows has
// (infra/windows/sef-platform.ps1: the Administrator check, service control, icacls, sc.exe, WinSW, node.exe) replaced
// by test/deploy/windows/platform-stub.ps1, which records them. Arguments, config selection, ACLs, the service account,
// the readiness check against a real HTTP server, error paths and exit codes. What needs Windows itself:
// infra/windows/README.md.
import { createHash } from "node:crypto";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { zipSync } from "fflate";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { repoRoot } from "./support/bicep.js";
import { runProcess } from "../helpers/run-process.js";
import { pwsh } from "../setup/pwsh.js";

const scratch = mkdtempSync(join(tmpdir(), "sef-windows-scripts-"));
const stub = join(repoRoot, "test/deploy/windows/platform-stub.ps1");
const driver = join(repoRoot, "test/deploy/windows/run-scenarios.ps1");
const commands = (
  JSON.parse(readFileSync(join(repoRoot, "infra/vmapp/commands.json"), "utf8")) as {
    windows: Record<"install" | "update" | "remove" | "packageFileName", string>;
  }
).windows;
const serviceSid = "S-1-5-80-2955682943-1555227763-3375060471-2719680149-2931322413"; // sc.exe showsid sef
const sha256 = (bytes: Buffer | Uint8Array): string => createHash("sha256").update(bytes).digest("hex");

/** A readiness endpoint: /readyz answers `status`. */
async function readyz(status: number): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => res.writeHead(req.url === "/readyz" ? status : 404).end());
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

/** The unpacked sef zip as install.ps1 sees it: the files it checks for, with the stub as sef-platform.ps1. */
function zipFiles(): Record<string, Uint8Array> {
  const text = (s: string): Uint8Array => new TextEncoder().encode(s);
  return {
    "install.ps1": readFileSync(join(repoRoot, "infra/windows/install.ps1")),
    "sef-platform.ps1": readFileSync(stub),
    "node.exe": text("node"),
    "sef.mjs": text("// the agent"),
    "sef-service.exe": text("winsw"),
    "sef-service.xml": readFileSync(join(repoRoot, "infra/windows/sef-service.xml")),
    "sef-service.mjs": text("// the launcher"),
  };
}
const top = "sef-9.9.9-win-x64";
const sefZip = zipSync(
  Object.fromEntries(Object.entries(zipFiles()).map(([name, bytes]) => [`${top}/${name}`, bytes])),
);

/** The VM Application's bundle zip: vmapp.ps1, the sef zip and SHA256SUMS (as bundle.sh writes them). */
function bundleZip(sums = `${sha256(sefZip)}  ${top}.zip\n`): Uint8Array {
  return zipSync({
    "vmapp.ps1": readFileSync(join(repoRoot, "infra/vmapp/vmapp.ps1")),
    [`${top}.zip`]: [sefZip, { level: 0 }],
    SHA256SUMS: new TextEncoder().encode(sums),
  });
}

interface Machine {
  readonly dir: string;
  readonly env: Record<string, string>;
  calls(): { call: string; args: string[] }[];
}
let machines = 0;
/** A scratch "Windows": Program Files, ProgramData, the stub's call log and service state. */
function machine(service?: "Running" | "Stopped", env: Record<string, string> = {}): Machine {
  const dir = join(scratch, `machine-${++machines}`);
  mkdirSync(join(dir, "Program Files"), { recursive: true });
  mkdirSync(join(dir, "ProgramData"), { recursive: true });
  if (service !== undefined) writeFileSync(join(dir, "service"), service);
  writeFileSync(join(dir, "calls.jsonl"), "");
  return {
    dir,
    env: {
      ProgramFiles: join(dir, "Program Files"),
      ProgramData: join(dir, "ProgramData"),
      SEF_STUB_CALLS: join(dir, "calls.jsonl"),
      SEF_STUB_SERVICE: join(dir, "service"),
      ...env,
    },
    calls: () =>
      readFileSync(join(dir, "calls.jsonl"), "utf8")
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { call: string; args: string[] }),
  };
}

/** The unpacked sef zip in the machine's temp folder; returns install.ps1's path. */
function unpackedZip(m: Machine): string {
  const dir = join(m.dir, "unpacked", top);
  mkdirSync(dir, { recursive: true });
  for (const [name, bytes] of Object.entries(zipFiles())) writeFileSync(join(dir, name), bytes);
  return join(dir, "install.ps1");
}

/** The VM Application agent's download directory for sef-windows 1.0.0, the bundle unpacked into bundle\. */
function downloadDir(m: Machine, files: Record<string, string> = {}, sums?: string): string {
  const dir = join(m.dir, "Downloads", "sef-windows", "1.0.0");
  mkdirSync(join(dir, "bundle"), { recursive: true });
  copyFileSync(join(repoRoot, "infra/vmapp/vmapp.ps1"), join(dir, "bundle", "vmapp.ps1"));
  writeFileSync(join(dir, "bundle", `${top}.zip`), sefZip);
  writeFileSync(join(dir, "bundle", "SHA256SUMS"), sums ?? `${sha256(sefZip)}  ${top}.zip\n`);
  for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), content);
  return dir;
}

interface Scenario {
  readonly name: string;
  readonly script: string;
  readonly parameters?: Record<string, unknown>;
  readonly cwd: string;
  readonly machine: Machine;
}
interface Outcome {
  readonly exitCode: number | null;
  readonly threw: string | null;
  readonly output: string;
  readonly stderr: string;
}

/** Runs the scenarios in one pwsh (test/deploy/windows/run-scenarios.ps1), the event loop free for the /readyz peer. */
interface Parsed {
  readonly file: string;
  readonly errors: string[];
  readonly functions: Record<string, string[]>;
}

async function runScenarios(
  scenarios: readonly Scenario[],
  parseFiles: readonly string[],
): Promise<{ outcomes: Map<string, Outcome>; parsed: Map<string, Parsed> }> {
  const file = join(scratch, "scenarios.json");
  writeFileSync(
    file,
    JSON.stringify(
      scenarios.map((s) => ({
        name: s.name,
        script: s.script,
        parameters: s.parameters ?? {},
        cwd: s.cwd,
        env: s.machine.env,
      })),
    ),
  );
  const args = ["-NoProfile", "-NonInteractive", "-File", driver, file, ...parseFiles];
  const run = await runProcess(pwsh(), args, 120_000);
  if (run.code !== 0) throw new Error(`pwsh: ${run.code} ${run.stdout}\n${run.stderr}`);
  const stderrOf = new Map<string, string>();
  for (const part of run.stderr.split(/^=== /m).slice(1)) {
    const newline = part.indexOf("\n");
    stderrOf.set(part.slice(0, newline), part.slice(newline + 1));
  }
  const outcomes = new Map<string, Outcome>();
  const parsed = new Map<string, Parsed>();
  for (const line of run.stdout.split("\n").filter((l) => l.startsWith("{"))) {
    const r = JSON.parse(line) as (Omit<Outcome, "stderr"> & { name: string }) | Parsed;
    if ("file" in r) parsed.set(r.file, r);
    else outcomes.set(r.name, { ...r, stderr: stderrOf.get(r.name) ?? "" });
  }
  return { outcomes, parsed };
}

const servers: Server[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  rmSync(scratch, { recursive: true, force: true });
});

describe("infra/windows/install.ps1 and infra/vmapp/vmapp.ps1 under pwsh, Windows' own calls recorded", () => {
  const m = {
    fresh: machine(),
    upgrade: machine("Running"),
    notAdmin: machine(undefined, { SEF_STUB_NOT_ADMIN: "1" }),
    noConfig: machine(),
    icaclsFails: machine(undefined, { SEF_STUB_FAIL: "icacls.exe" }),
    notReady: machine(),
    underscore: machine(),
    dash: machine(),
    badSums: machine(),
    badSha: machine(),
    remove: machine("Running"),
    installFails: machine(undefined, { SEF_STUB_FAIL: "node.exe" }),
  };
  let outcomes: Map<string, Outcome>;
  let parsed: Map<string, Parsed>;
  const payloads = (["install", "update", "remove"] as const).map((action) => {
    const file = join(scratch, `command-${action}.ps1`);
    writeFileSync(file, powershellPayload(commands[action]));
    return file;
  });
  const broken = join(scratch, "broken.ps1");
  writeFileSync(broken, 'function f( { $x = "\n');
  const scripts = [
    "infra/windows/install.ps1",
    "infra/windows/sef-platform.ps1",
    "infra/vmapp/vmapp.ps1",
    "test/deploy/windows/platform-stub.ps1",
    "test/deploy/windows/run-scenarios.ps1",
    "test/deploy/windows/parse.ps1",
  ].map((f) => join(repoRoot, f));
  const outcome = (name: keyof typeof m): Outcome => outcomes.get(name)!;
  const configOf = (mm: Machine): string => join(mm.dir, "ProgramData", "sef", "config.json");

  beforeAll(async () => {
    const ok = await readyz(200);
    const failing = await readyz(503);
    servers.push(ok.server, failing.server);
    const config = (port: number): string =>
      `\uFEFF${JSON.stringify({ sinks: ["stdout"], dataDir: "/var/lib/sef", metrics: { host: "127.0.0.1", port } })}`;
    writeFileSync(join(m.fresh.dir, "config.json"), config(ok.port));
    writeFileSync(join(m.notReady.dir, "config.json"), config(failing.port));
    mkdirSync(join(m.upgrade.dir, "ProgramData", "sef"), { recursive: true });
    writeFileSync(configOf(m.upgrade), '{"sinks":["stdout"],"dataDir":"C:\\\\kept"}');
    const install = (mm: Machine, name: string, parameters: Record<string, unknown> = {}): Scenario => ({
      name,
      script: unpackedZip(mm),
      parameters,
      cwd: mm.dir,
      machine: mm,
    });
    const vmapp = (mm: Machine, name: string, dir: string, parameters: Record<string, unknown>): Scenario => ({
      name,
      script: join(dir, "bundle", "vmapp.ps1"),
      parameters,
      cwd: dir,
      machine: mm,
    });
    const vmConfig = JSON.stringify({ sinks: ["stdout"], metrics: { enabled: false } });
    mkdirSync(join(m.remove.dir, "Program Files", "sef"), { recursive: true });
    writeFileSync(join(m.remove.dir, "Program Files", "sef", "sef-service.exe"), "winsw");
    ({ outcomes, parsed } = await runScenarios(
      [
        install(m.fresh, "fresh", { ConfigPath: join(m.fresh.dir, "config.json") }),
        install(m.upgrade, "upgrade", { NoStart: true }),
        install(m.notAdmin, "notAdmin", { ConfigPath: join(m.fresh.dir, "config.json") }),
        install(m.noConfig, "noConfig"),
        install(m.icaclsFails, "icaclsFails", { ConfigPath: join(m.fresh.dir, "config.json"), NoStart: true }),
        install(m.notReady, "notReady", { ConfigPath: join(m.notReady.dir, "config.json"), ReadyTimeoutSeconds: 2 }),
        vmapp(m.underscore, "underscore", downloadDir(m.underscore, { "sef-windows_config": vmConfig }), {
          Action: "install",
        }),
        vmapp(m.dash, "dash", downloadDir(m.dash, { "sef-windows-config": vmConfig }), { Action: "update" }),
        vmapp(m.badSums, "badSums", downloadDir(m.badSums, {}, `${"0".repeat(64)}  ${top}.zip\n`), {
          Action: "install",
        }),
        vmapp(m.badSha, "badSha", downloadDir(m.badSha, { "sef-config.json": vmConfig }), {
          Action: "install",
          Sha256: "ab".repeat(32),
        }),
        vmapp(m.remove, "remove", downloadDir(m.remove), { Action: "remove" }),
        vmapp(m.installFails, "installFails", downloadDir(m.installFails, { "sef-config.json": vmConfig }), {
          Action: "install",
        }),
      ],
      [...scripts, ...payloads, broken],
    ));
  }, 180_000);

  it("PowerShell's own parser takes every script and the Windows commands; the stub has sef-platform.ps1's functions", () => {
    for (const file of [...scripts, ...payloads]) expect(parsed.get(file)?.errors, file).toEqual([]);
    expect(parsed.get(broken)?.errors.length).toBeGreaterThan(0);
    const real = parsed.get(scripts[1]!)!.functions;
    const stubbed = parsed.get(scripts[3]!)!.functions;
    expect(Object.keys(real).sort()).toEqual([
      "Assert-SefAdministrator",
      "Get-SefServiceStatus",
      "Invoke-SefNative",
      "Set-SefServiceAccount",
      "Start-SefService",
      "Stop-SefService",
    ]);
    for (const [name, parameters] of Object.entries(real)) expect(stubbed[name], name).toEqual(parameters);
  });

  it("install.ps1: ACLs for NT SERVICE\\sef, the files, WinSW, the virtual account, start, /readyz; config rewritten", () => {
    expect(outcome("fresh"), outcome("fresh").stderr).toMatchObject({ exitCode: 0, threw: null });
    const data = join(m.fresh.dir, "ProgramData", "sef");
    const calls = m.fresh.calls().map((c) => [c.call, ...c.args]);
    expect(calls).toEqual([
      ["Assert-SefAdministrator"],
      [
        "Invoke-SefNative",
        "icacls.exe",
        data,
        "/inheritance:r",
        "/grant:r",
        "*S-1-5-18:(OI)(CI)F",
        "*S-1-5-32-544:(OI)(CI)F",
        `*${serviceSid}:(OI)(CI)RX`,
        "/T",
        "/Q",
      ],
      ["Invoke-SefNative", "icacls.exe", join(data, "data"), "/grant:r", `*${serviceSid}:(OI)(CI)M`, "/T", "/Q"],
      ["Invoke-SefNative", "icacls.exe", join(data, "logs"), "/grant:r", `*${serviceSid}:(OI)(CI)M`, "/T", "/Q"],
      ["Invoke-SefNative", "node.exe", join(m.fresh.dir, "Program Files", "sef", "sef.mjs"), "run", "--help"],
      ["Invoke-SefNative", "sef-service.exe", "install"],
      ["Set-SefServiceAccount", "sef", "NT SERVICE\\sef"],
      ["Start-SefService", "sef"],
    ]);
    const written = readFileSync(configOf(m.fresh));
    expect(written[0]).not.toBe(0xef); // no BOM
    expect(JSON.parse(written.toString("utf8"))).toMatchObject({ sinks: ["stdout"], dataDir: join(data, "data") });
    expect(existsSync(join(m.fresh.dir, "Program Files", "sef", "sef-platform.ps1"))).toBe(true);
    expect(outcome("fresh").output).toMatch(
      /sef installed and ready: .*account NT SERVICE\\sef, http:\/\/127\.0\.0\.1/,
    );
  });

  it("install.ps1 -NoStart over a running service: stops it, keeps the config, registers nothing new", () => {
    expect(outcome("upgrade"), outcome("upgrade").stderr).toMatchObject({ exitCode: 0, threw: null });
    const calls = m.upgrade.calls().map((c) => c.call + (c.args[0] === "icacls.exe" ? ":icacls" : ""));
    expect(calls.filter((c) => c === "Invoke-SefNative:icacls")).toHaveLength(3);
    expect(calls).toContain("Stop-SefService");
    expect(m.upgrade.calls().some((c) => c.args.includes("sef-service.exe"))).toBe(false);
    expect(calls).toContain("Set-SefServiceAccount");
    expect(calls).not.toContain("Start-SefService");
    expect(readFileSync(configOf(m.upgrade), "utf8")).toBe('{"sinks":["stdout"],"dataDir":"C:\\\\kept"}');
    expect(outcome("upgrade").output).toContain("sef installed, not started");
  });

  it("install.ps1 fails before changing anything: not Administrator, no config at all; and when icacls fails", () => {
    expect(outcome("notAdmin").threw).toBe("must run as Administrator");
    expect(m.notAdmin.calls()).toEqual([{ call: "Assert-SefAdministrator", args: [] }]);
    expect(outcome("noConfig").threw).toMatch(/config\.json does not exist: pass -ConfigPath$/);
    expect(m.noConfig.calls()).toHaveLength(1);
    expect(outcome("icaclsFails").threw).toMatch(/^.*icacls\.exe .* failed with exit code 5$/);
    expect(m.icaclsFails.calls().map((c) => c.call)).toEqual(["Assert-SefAdministrator", "Invoke-SefNative"]);
  });

  it("install.ps1 throws when /readyz does not answer 200 within -ReadyTimeoutSeconds", () => {
    expect(outcome("notReady").threw).toMatch(/^sef did not become ready within 2 s \(service Running, http:/);
  });

  it("vmapp.ps1 finds Azure's default config names, <application>_config and <application>-config", () => {
    for (const [name, mm] of [
      ["underscore", m.underscore],
      ["dash", m.dash],
    ] as const) {
      expect(outcome(name), outcome(name).stderr).toMatchObject({ exitCode: 0, threw: null });
      expect(outcome(name).output).toContain(`sef-windows${name === "underscore" ? "_" : "-"}config`);
      expect(JSON.parse(readFileSync(configOf(mm), "utf8"))).toMatchObject({ sinks: ["stdout"] });
      expect(mm.calls().map((c) => c.call)).toContain("Set-SefServiceAccount");
    }
  });

  it("vmapp.ps1 refuses a sef zip whose SHA-256 is not the bundle's SHA256SUMS one or -Sha256's: exit 1, nothing run", () => {
    for (const name of ["badSums", "badSha"] as const) {
      expect(outcome(name)).toMatchObject({ exitCode: 1, threw: null });
      expect(outcome(name).stderr).toMatch(
        new RegExp(`^sef vmapp: FAILED: ${top}\\.zip has SHA-256 ${sha256(sefZip)}, not [0-9a-f]{64}: refusing`, "m"),
      );
      expect(m[name].calls()).toEqual([]);
    }
  });

  it("vmapp.ps1 remove stops and unregisters the service, deletes the program files, keeps ProgramData; a failed install exits 1", () => {
    expect(outcome("remove"), outcome("remove").stderr).toMatchObject({ exitCode: 0, threw: null });
    expect(m.remove.calls().map((c) => [c.call, ...c.args])).toEqual([
      ["Stop-SefService", "sef"],
      ["Invoke-SefNative", "sef-service.exe", "uninstall"],
    ]);
    expect(existsSync(join(m.remove.dir, "Program Files", "sef"))).toBe(false);
    expect(existsSync(join(m.remove.dir, "service"))).toBe(false);
    expect(outcome("installFails")).toMatchObject({ exitCode: 1, threw: null });
    expect(outcome("installFails").stderr).toMatch(/^sef vmapp: FAILED: .*node\.exe .* failed with exit code 5/m);
  });
});

/** The PowerShell a Windows command runs: the -Command "..." argument cmd.exe passes to powershell.exe. */
function powershellPayload(command: string): string {
  const m = /^powershell\.exe -NoProfile -NonInteractive -ExecutionPolicy Bypass -Command "([^"]*)"$/.exec(command);
  if (m === null) throw new Error(`not a powershell.exe -Command "..." line: ${command}`);
  return m[1]!;
}

describe("infra/vmapp/commands.json's Windows commands, run by pwsh -Command as powershell.exe would", () => {
  /**
   * Runs `action`'s command from the agent's download directory holding `files`, as published with the SHA-256 of
   * `published` (default: the one file given, as upload.sh and vmapp.bicep write it into the version's commands).
   */
  async function runCommand(
    action: "install" | "remove",
    files: Record<string, Uint8Array | string>,
    published: Uint8Array | string = Object.values(files)[0] ?? "",
  ) {
    const mm = machine();
    const dir = join(mm.dir, "Downloads", "sef-windows", "1.0.0");
    mkdirSync(dir, { recursive: true });
    for (const [file, content] of Object.entries(files)) writeFileSync(join(dir, file), content);
    const hash = createHash("sha256").update(published).digest("hex");
    const command = powershellPayload(commands[action]).replaceAll("@BUNDLE_SHA256@", hash);
    const args = ["-NoProfile", "-NonInteractive", "-ExecutionPolicy", "Bypass", "-WorkingDirectory", dir];
    const run = await runProcess(pwsh(), [...args, "-Command", command], 120_000, {
      env: { ...process.env, ...mm.env },
    });
    return { status: run.code, stderr: run.stderr, machine: mm };
  }

  it("exit 1 when the package is missing, broken (Copy-Item, Expand-Archive fail), swapped or refused, 0 when vmapp.ps1 succeeds", async () => {
    const [missing, broken, removed, refused, swapped] = await Promise.all([
      runCommand("install", {}),
      runCommand("install", { "sef-windows": "not a zip" }),
      runCommand("remove", { "sef-windows": bundleZip() }), // under the application's name
      runCommand("install", { [commands.packageFileName]: bundleZip(`${"1".repeat(64)}  x\n`) }),
      // A blob swapped after publishing: the version's commands carry the published bundle's SHA-256.
      runCommand("remove", { [commands.packageFileName]: bundleZip() }, "the bundle as published"),
    ]);
    expect(swapped.status, swapped.stderr).toBe(1);
    expect(swapped.stderr).toMatch(/is not the published bundle \(its SHA-256 differs\): refusing it/);
    expect(swapped.machine.calls()).toEqual([]);
    expect(missing.status, missing.stderr).toBe(1);
    expect(missing.stderr).toMatch(/^sef vmapp: FAILED: /m);
    expect(broken.status, broken.stderr).toBe(1);
    expect(removed.status, removed.stderr).toBe(0);
    expect(removed.machine.calls()).toEqual([]); // no service: nothing to stop
    expect(refused.status, refused.stderr).toBe(1);
    expect(refused.stderr).toContain(`SHA256SUMS has 0 lines for ${top}.zip`);
  }, 180_000);
});
