// The artifacts the package tests inspect: the ones `.ci/run` built (SEF_TEST_PACKAGE_DIR), else built here once per
// test file with `npm run package`'s own code into a scratch directory.
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { buildArtifacts, type Target } from "../../infra/package/main.js";

export const repoRoot = resolve(import.meta.dirname, "../..");
export const packageVersion = (JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as { version: string }).version;

export type LinuxTarget = "deb-x64" | "rpm-x64" | "tar-x64" | "txz-x64" | "fleet-tar-x64";

const fleetVersion = (JSON.parse(readFileSync(join(repoRoot, "src/fleet/package.json"), "utf8")) as { version: string }).version;

export const artifactNames: Readonly<Record<LinuxTarget, string>> = {
  "deb-x64": `sef_${packageVersion}_amd64.deb`,
  "rpm-x64": `sef-${packageVersion}-1.x86_64.rpm`,
  "tar-x64": `sef-${packageVersion}-linux-x64.tar.gz`,
  "txz-x64": `sef-${packageVersion}-linux-x64.tar.xz`,
  "fleet-tar-x64": `sef-fleet-${fleetVersion}-linux-x64.tar.gz`,
};

/** Artifacts built here for this process, deleted at exit (SEF_TEST_PACKAGE_DIR's are left alone). */
const builtHere: string[] = [];
process.once("exit", () => {
  for (const dir of builtHere) rmSync(dir, { recursive: true, force: true });
});

/** Paths of the requested artifacts, built now unless SEF_TEST_PACKAGE_DIR already holds them. */
export async function linuxArtifacts(targets: readonly LinuxTarget[]): Promise<Record<string, string>> {
  const prebuilt = process.env.SEF_TEST_PACKAGE_DIR;
  const dir = prebuilt !== undefined && targets.every((t) => existsSync(join(prebuilt, artifactNames[t])))
    ? prebuilt
    : mkdtempSync(join(tmpdir(), "sef-artifacts-"));
  if (dir !== prebuilt) {
    builtHere.push(dir);
    await buildArtifacts({ repoRoot, targets: targets as Target[], outDir: dir });
  }
  return Object.fromEntries(targets.map((t) => [t, join(dir, artifactNames[t])]));
}
