// Windows MSI: the zip's program files in ProgramFiles64Folder\sef, the service registered by Windows Installer itself
// (ServiceInstall/ServiceControl, recovery actions), config.json in CommonAppDataFolder\sef only when absent and kept.
// Built with Debian's wixl 0.101, finished with msitools' msibuild (what wixl 0.101 cannot write) and made byte-stable.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { copyFileSync, mkdirSync, readFileSync, renameSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import {
  virtualAccountSid,
  windowsDefaultConfig,
  windowsProgramFiles,
  windowsServiceAccount,
  windowsServiceName,
  type WindowsInputs,
} from "./windows.js";

/** Never changes: Windows Installer finds the sef it replaces by it (MajorUpgrade). */
export const msiUpgradeCode = "46FE0E39-C319-4E07-B263-489A8491E7DC";

const serviceSid = virtualAccountSid(windowsServiceName);
/**
 * `C:\ProgramData\sef` and what is created in it later (data, logs): LocalSystem and Administrators full control, the
 * service's virtual account modify (0x1301bf: no delete-child, no ACL or owner change), nothing inherited.
 */
export const configDirSddl = `D:PAI(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;OICI;0x1301bf;;;${serviceSid})`;
/** `C:\ProgramData\sef\config.json` when the MSI installs it: the service account reads it only. */
export const configFileSddl = `D:PAI(A;;FA;;;SY)(A;;FA;;;BA)(A;;FR;;;${serviceSid})`;

/** Component attribute bits (Component table): 16 Permanent, 128 NeverOverwrite, 256 64-bit. */
const componentAttributes = { permanent: 16, neverOverwrite: 128, win64: 256 } as const;

export interface MsiInputs extends WindowsInputs {
  /** Scratch directory for the staged files and the WiX source. */
  readonly workDir: string;
}

/** The service as sef-service.xml defines it for WinSW, so the MSI registers the same service `install` would. */
export interface WinswService {
  readonly id: string;
  readonly displayName: string;
  readonly description: string;
  /** SCM action per failure: 0 none, 1 restart, 2 reboot; and its delay. */
  readonly failureActions: readonly { readonly action: number; readonly delayMs: number }[];
  /** Failure count reset after this many seconds without failure (WinSW's default: one day). */
  readonly resetPeriodS: number;
}

/** The file name `msiexec /i` takes. */
export function msiFileName(version: string): string {
  return `sef-${version}-x64.msi`;
}

/** A name-based (SHA-1, RFC 4122 version 5) UUID, upper case without braces: same name, same UUID. */
export function nameBasedUuid(namespace: string, name: string): string {
  const hash = createHash("sha1")
    .update(Buffer.from(namespace.replace(/-/g, ""), "hex"))
    .update(name, "utf8")
    .digest();
  hash[6] = (hash[6]! & 0x0f) | 0x50;
  hash[8] = (hash[8]! & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString("hex").toUpperCase();
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** ProductCode: one per version, so the same version is never installed twice and a newer one upgrades it. */
export function msiProductCode(version: string): string {
  return nameBasedUuid(msiUpgradeCode, `ProductCode ${version} x64`);
}

/** WinSW 1.17's duration suffixes (ServiceDescriptor.ParseTimeSpan), in milliseconds. */
const winswUnitsMs: Readonly<Record<string, number>> = {
  ms: 1,
  sec: 1000,
  secs: 1000,
  min: 60_000,
  mins: 60_000,
  hr: 3_600_000,
  hrs: 3_600_000,
  hour: 3_600_000,
  hours: 3_600_000,
  day: 86_400_000,
  days: 86_400_000,
};

/** A WinSW duration ("10 sec", "1 hour") in milliseconds. */
export function winswDurationMs(text: string): number {
  const match = /^(\d+)\s*([a-z]+)$/.exec(text.trim());
  const factor = match === null ? undefined : winswUnitsMs[match[2]!];
  if (factor === undefined) throw new Error(`sef-service.xml: cannot read the duration "${text}"`);
  return Number(match![1]) * factor;
}

function xmlElement(xml: string, tag: string): string | undefined {
  return new RegExp(`<${tag}>([^<]*)</${tag}>`).exec(xml)?.[1]?.trim();
}

export function readWinswService(xml: string): WinswService {
  const required = (tag: string): string => {
    const value = xmlElement(xml, tag);
    if (value === undefined) throw new Error(`sef-service.xml has no <${tag}>`);
    return value;
  };
  const actionCodes: Record<string, number> = { none: 0, restart: 1, reboot: 2 };
  const failureActions = [...xml.matchAll(/<onfailure action="(\w+)"(?: delay="([^"]*)")?\s*\/>/g)].map((m) => {
    const action = actionCodes[m[1]!];
    if (action === undefined) throw new Error(`sef-service.xml: unsupported onfailure action "${m[1]}"`);
    return { action, delayMs: m[2] === undefined ? 0 : winswDurationMs(m[2]) };
  });
  const reset = xmlElement(xml, "resetfailure");
  return {
    id: required("id"),
    displayName: required("name"),
    description: required("description"),
    failureActions,
    resetPeriodS: reset === undefined ? 86_400 : winswDurationMs(reset) / 1000,
  };
}

const escapeXml = (text: string): string =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

/** An MSI identifier (letters, digits, `_`, `.`; at most 72) for a path inside the install directory. */
export function msiIdentifier(prefix: string, relPath: string): string {
  const id = `${prefix}_${relPath.replace(/[^A-Za-z0-9_.]/g, "_")}`;
  return id.length <= 72 ? id : `${id.slice(0, 55)}_${createHash("sha1").update(relPath).digest("hex").slice(0, 16)}`;
}

interface DirectoryNode {
  readonly files: string[];
  readonly dirs: Map<string, DirectoryNode>;
}

function directoryTree(relPaths: readonly string[]): DirectoryNode {
  const root: DirectoryNode = { files: [], dirs: new Map() };
  for (const rel of relPaths) {
    let node = root;
    for (const part of rel.split("/").slice(0, -1)) {
      if (!node.dirs.has(part)) node.dirs.set(part, { files: [], dirs: new Map() });
      node = node.dirs.get(part)!;
    }
    node.files.push(rel);
  }
  return root;
}

/** The `<Directory>` tree under INSTALLDIR with one component per file (its key path), as WiX source lines. */
function programFilesXml(node: DirectoryNode, relDir: string, service: WinswService, pad: string): string[] {
  const lines: string[] = [];
  for (const rel of node.files) {
    lines.push(`${pad}<Component Id="${msiIdentifier("c", rel)}" Guid="*" Win64="yes">`);
    lines.push(
      `${pad}  <File Id="${msiIdentifier("f", rel)}" Name="${escapeXml(rel.slice(rel.lastIndexOf("/") + 1))}" Source="program-files/${escapeXml(rel)}" KeyPath="yes"/>`,
    );
    if (rel === "sef-service.exe") lines.push(...serviceXml(service, `${pad}  `));
    lines.push(`${pad}</Component>`);
  }
  for (const [name, child] of [...node.dirs].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const rel = relDir === "" ? name : `${relDir}/${name}`;
    lines.push(`${pad}<Directory Id="${msiIdentifier("d", rel)}" Name="${escapeXml(name)}">`);
    lines.push(...programFilesXml(child, rel, service, `${pad}  `), `${pad}</Directory>`);
  }
  return lines;
}

/** ServiceInstall (NT SERVICE\sef, automatic) and ServiceControl: start on install, stop on install and uninstall, remove on uninstall. */
function serviceXml(service: WinswService, pad: string): string[] {
  return [
    `${pad}<ServiceInstall Id="sef_service" Name="${escapeXml(service.id)}" DisplayName="${escapeXml(service.displayName)}" Description="${escapeXml(service.description)}"`,
    `${pad}    Type="ownProcess" Start="auto" ErrorControl="normal" Account="${escapeXml(windowsServiceAccount)}" Interactive="no" Vital="yes"/>`,
    `${pad}<ServiceControl Id="sef_service_control" Name="${escapeXml(service.id)}" Start="install" Stop="both" Remove="uninstall" Wait="yes"/>`,
  ];
}

/** The WiX source wixl builds: program files, the config directory, one feature, MajorUpgrade. */
export function renderWxs(inputs: { version: string; programFiles: readonly string[]; service: WinswService }): string {
  const components = [...inputs.programFiles.map((rel) => msiIdentifier("c", rel)), "c_config_dir", "c_config_json"];
  if (new Set(components).size !== components.length)
    throw new Error("two program files map to the same MSI identifier");
  return `<?xml version="1.0" encoding="utf-8"?>
<Wix xmlns="http://schemas.microsoft.com/wix/2006/wi">
  <Product Id="${msiProductCode(inputs.version)}" Name="sef (Scheduled Events Forwarder)" Language="1033" Version="${inputs.version}"
      Manufacturer="sef" UpgradeCode="${msiUpgradeCode}">
    <Package InstallerVersion="500" Compressed="yes" InstallScope="perMachine" Manufacturer="sef"
        Description="sef ${inputs.version}: forwards Azure Scheduled Events" Comments="Installs sef into ProgramFiles64Folder\\sef as the service ${escapeXml(inputs.service.id)}; config in CommonAppDataFolder\\sef"/>
    <MajorUpgrade DowngradeErrorMessage="A newer version of sef is already installed."/>
    <MediaTemplate EmbedCab="yes"/>
    <Directory Id="TARGETDIR" Name="SourceDir">
      <Directory Id="ProgramFiles64Folder">
        <Directory Id="INSTALLDIR" Name="sef">
${programFilesXml(directoryTree(inputs.programFiles), "", inputs.service, "          ").join("\n")}
        </Directory>
      </Directory>
      <Directory Id="CommonAppDataFolder">
        <Directory Id="SefConfigDir" Name="sef">
          <Component Id="c_config_dir" Guid="${nameBasedUuid(msiUpgradeCode, "component c_config_dir")}" Win64="yes">
            <CreateFolder/>
          </Component>
          <Component Id="c_config_json" Guid="*" Win64="yes">
            <File Id="config.json" Name="config.json" Source="config/config.json" KeyPath="yes"/>
          </Component>
        </Directory>
      </Directory>
    </Directory>
    <Feature Id="sef" Title="sef" Level="1">
${components.map((id) => `      <ComponentRef Id="${id}"/>`).join("\n")}
    </Feature>
  </Product>
</Wix>
`;
}

const sqlString = (text: string): string => `'${text.replace(/'/g, "''")}'`;

/**
 * What wixl 0.101 cannot write, as msibuild SQL: the config's Permanent and NeverOverwrite bits (it ignores both
 * attributes), the config directory's Permanent bit, the SCM recovery actions (MsiServiceConfigFailureActions, applied
 * by MsiConfigureServices, Windows Installer 5.0) and the ACLs (MsiLockPermissionsEx, SDDL, Windows Installer 5.0).
 */
export function finishingQueries(service: WinswService): string[] {
  const { permanent, neverOverwrite, win64 } = componentAttributes;
  const actions = service.failureActions;
  return [
    `UPDATE \`Component\` SET \`Attributes\` = ${permanent | neverOverwrite | win64} WHERE \`Component\` = 'c_config_json'`,
    `UPDATE \`Component\` SET \`Attributes\` = ${permanent | win64} WHERE \`Component\` = 'c_config_dir'`,
    "CREATE TABLE `MsiServiceConfigFailureActions` (`MsiServiceConfigFailureActions` CHAR(72) NOT NULL, `Name` CHAR(255) NOT NULL LOCALIZABLE, " +
      "`Event` SHORT NOT NULL, `ResetPeriod` LONG, `RebootMessage` CHAR(255) LOCALIZABLE, `Command` CHAR(255) LOCALIZABLE, `Actions` CHAR(255), " +
      "`DelayActions` CHAR(255), `Component_` CHAR(72) NOT NULL PRIMARY KEY `MsiServiceConfigFailureActions`)",
    // Event 1 install + 4 reinstall; the lists are [~]-separated.
    "INSERT INTO `MsiServiceConfigFailureActions` (`MsiServiceConfigFailureActions`, `Name`, `Event`, `ResetPeriod`, `Actions`, `DelayActions`, `Component_`) " +
      `VALUES ('sef_recovery', ${sqlString(service.id)}, 5, ${service.resetPeriodS}, ${sqlString(actions.map((a) => a.action).join("[~]"))}, ` +
      `${sqlString(actions.map((a) => a.delayMs).join("[~]"))}, '${msiIdentifier("c", "sef-service.exe")}')`,
    "INSERT INTO `InstallExecuteSequence` (`Action`, `Condition`, `Sequence`) VALUES ('MsiConfigureServices', 'VersionNT>=600', 5850)",
    "CREATE TABLE `MsiLockPermissionsEx` (`MsiLockPermissionsEx` CHAR(72) NOT NULL, `LockObject` CHAR(72) NOT NULL, `Table` CHAR(32) NOT NULL, " +
      "`SDDL` LONGCHAR NOT NULL, `Condition` CHAR(255) PRIMARY KEY `MsiLockPermissionsEx`)",
    `INSERT INTO \`MsiLockPermissionsEx\` (\`MsiLockPermissionsEx\`, \`LockObject\`, \`Table\`, \`SDDL\`) VALUES ('lock_config_dir', 'SefConfigDir', 'CreateFolder', ${sqlString(configDirSddl)})`,
    `INSERT INTO \`MsiLockPermissionsEx\` (\`MsiLockPermissionsEx\`, \`LockObject\`, \`Table\`, \`SDDL\`) VALUES ('lock_config_json', 'config.json', 'File', ${sqlString(configFileSddl)})`,
  ];
}

function run(command: string, args: readonly string[], cwd: string): string {
  // TZ=UTC: the cabinet stores each file's mtime as local DOS time.
  const result = spawnSync(command, args, {
    cwd,
    encoding: "utf8",
    env: { ...process.env, TZ: "UTC", LC_ALL: "C" },
    maxBuffer: 1 << 26,
  });
  if (result.error !== undefined)
    throw new Error(`${command}: ${result.error.message} (Debian: apt-get install wixl msitools)`);
  // wixl warns and goes on when it meets an attribute it does not know: such a warning is a build error here.
  if (result.status !== 0 || /WARNING|CRITICAL/.test(result.stderr)) {
    throw new Error(`${command} ${args.join(" ")} failed (${result.status}):\n${result.stderr}${result.stdout}`);
  }
  return result.stdout;
}

/** FILETIME (100 ns since 1601) of a Unix time, as the 8 little-endian bytes after its VT_FILETIME (0x40) tag. */
function filetimeProperty(epochS: number): Buffer {
  const bytes = Buffer.alloc(12);
  bytes.writeUInt32LE(0x40, 0);
  bytes.writeBigUInt64LE((BigInt(epochS) + 11_644_473_600n) * 10_000_000n, 4);
  return bytes;
}

/** Replaces every occurrence of `from` by `to` (same length), requiring exactly `count` of them. */
function replaceExactly(bytes: Buffer, from: Buffer, to: Buffer, count: number, what: string): void {
  const found: number[] = [];
  for (let at = bytes.indexOf(from); at !== -1; at = bytes.indexOf(from, at + 1)) found.push(at);
  if (found.length !== count)
    throw new Error(`MSI summary information: expected ${count} × ${what}, found ${found.length}`);
  for (const at of found) to.copy(bytes, at);
}

/**
 * wixl stamps the build time (created, last saved) and a random package code into the summary information. Sets the
 * times to `epochS` and the package code to a UUID of the package's own bytes, so same inputs give the same bytes and
 * any other package gets another code (Windows Installer caches packages by that code).
 */
export function stabilizeSummaryInformation(file: string, epochS: number): void {
  const summary = run("msiinfo", ["suminfo", file], dirname(file));
  const uuid = /^Revision number \(UUID\): (\{[0-9A-F-]{36}\})$/m.exec(summary)?.[1];
  const stamps = [...summary.matchAll(/^(?:Created|Last saved): \w{3} (\w{3}) +(\d+) (\d\d):(\d\d):(\d\d) (\d{4})$/gm)];
  if (uuid === undefined || stamps.length !== 2) throw new Error(`msiinfo suminfo: unexpected output:\n${summary}`);
  const bytes = readFileSync(file);
  const months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
  const times = stamps.map(
    (m) => Date.UTC(Number(m[6]), months.indexOf(m[1]!), Number(m[2]), Number(m[3]), Number(m[4]), Number(m[5])) / 1000,
  );
  for (const time of new Set(times)) {
    replaceExactly(
      bytes,
      filetimeProperty(time),
      filetimeProperty(epochS),
      times.filter((t) => t === time).length,
      "build time",
    );
  }
  const placeholder = Buffer.from(
    `{${"0".repeat(8)}-${"0".repeat(4)}-${"0".repeat(4)}-${"0".repeat(4)}-${"0".repeat(12)}}`,
    "latin1",
  );
  replaceExactly(bytes, Buffer.from(uuid, "latin1"), placeholder, 1, "package code");
  const packageCode = nameBasedUuid(msiUpgradeCode, `PackageCode ${createHash("sha256").update(bytes).digest("hex")}`);
  replaceExactly(bytes, placeholder, Buffer.from(`{${packageCode}}`, "latin1"), 1, "package code placeholder");
  writeFileSync(file, bytes);
}

/** Copies the files wixl packs under `stageDir` with one mtime (the cabinet keeps each file's). */
function stage(files: ReadonlyMap<string, string>, stageDir: string, epochS: number): void {
  for (const [rel, source] of files) {
    const target = join(stageDir, rel);
    mkdirSync(dirname(target), { recursive: true });
    copyFileSync(source, target);
    utimesSync(target, epochS, epochS);
  }
}

export function buildWindowsMsi(inputs: MsiInputs): string {
  if (!/^\d+\.\d+\.\d+$/.test(inputs.version))
    throw new Error(`MSI ProductVersion must be major.minor.patch, not ${inputs.version}`);
  const msiDir = join(inputs.workDir, "msi");
  rmSync(msiDir, { recursive: true, force: true });
  const programFiles = windowsProgramFiles(inputs);
  const service = readWinswService(readFileSync(programFiles.get("sef-service.xml")!, "utf8"));
  const staged = new Map([...programFiles].map(([rel, source]) => [`program-files/${rel}`, source]));
  staged.set("config/config.json", windowsDefaultConfig(inputs.repoRoot));
  stage(staged, msiDir, inputs.epochS);
  const wxs = join(msiDir, "sef.wxs");
  writeFileSync(wxs, renderWxs({ version: inputs.version, programFiles: [...programFiles.keys()].sort(), service }));

  const built = join(msiDir, "sef.msi");
  run("wixl", ["--arch", "x64", "--output", built, wxs], msiDir);
  run("msibuild", [built, ...finishingQueries(service).flatMap((query) => ["-q", query])], msiDir);
  stabilizeSummaryInformation(built, inputs.epochS);
  const out = join(inputs.outDir, msiFileName(inputs.version));
  renameSync(built, out);
  return out;
}
