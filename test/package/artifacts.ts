// The artifacts the package tests inspect: the ones `.ci/run` built (SEF_TEST_PACKAGE_DIR), else built here once per
// test file with `npm run package`'s own code into a scratch directory.
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { buildArtifacts, type Target } from "../../infra/package/main.js";

export const repoRoot = resolve(import.meta.dirname, "../..");
export const packageVersion = (JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as { version: string }).version;

/** The version of the older build the package tests upgrade from (SEF_PACKAGE_VERSION=0.0.1 in `.ci/run`). */
export const olderPackageVersion = "0.0.1";

export type LinuxTarget = "deb-x64" | "rpm-x64" | "tar-x64" | "txz-x64" | "deb-arm64" | "rpm-arm64" | "tar-arm64";

/** The file name `npm run package` gives a target's artifact at `version`. */
export function artifactName(target: LinuxTarget, version = packageVersion): string {
  switch (target) {
    case "deb-x64":
      return `sef_${version}_amd64.deb`;
    case "deb-arm64":
      return `sef_${version}_arm64.deb`;
    case "rpm-x64":
      return `sef-${version}-1.x86_64.rpm`;
    case "rpm-arm64":
      return `sef-${version}-1.aarch64.rpm`;
    case "tar-x64":
      return `sef-${version}-linux-x64.tar.gz`;
    case "tar-arm64":
      return `sef-${version}-linux-arm64.tar.gz`;
    case "txz-x64":
      return `sef-${version}-linux-x64.tar.xz`;
  }
}

/** Artifacts built here for this process, deleted at exit (SEF_TEST_PACKAGE_DIR's are left alone). */
const builtHere: string[] = [];
process.once("exit", () => {
  for (const dir of builtHere) rmSync(dir, { recursive: true, force: true });
});

/** Paths of the requested artifacts at `version`, built now unless SEF_TEST_PACKAGE_DIR already holds them. */
export async function linuxArtifacts(targets: readonly LinuxTarget[], version = packageVersion): Promise<Record<string, string>> {
  const prebuilt = process.env.SEF_TEST_PACKAGE_DIR;
  const dir = prebuilt !== undefined && targets.every((t) => existsSync(join(prebuilt, artifactName(t, version))))
    ? prebuilt
    : mkdtempSync(join(tmpdir(), "sef-artifacts-"));
  if (dir !== prebuilt) {
    builtHere.push(dir);
    await buildArtifacts({ repoRoot, targets: targets as Target[], outDir: dir, version });
  }
  return Object.fromEntries(targets.map((t) => [t, join(dir, artifactName(t, version))]));
}

/** The ELF machine (e_machine) of an executable's header: 62 x86-64, 183 AArch64. */
export function elfMachine(header: Buffer): number {
  if (header.length < 20 || header.readUInt32BE(0) !== 0x7f454c46) throw new Error("not an ELF file");
  return header[5] === 1 ? header.readUInt16LE(18) : header.readUInt16BE(18);
}
