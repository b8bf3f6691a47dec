// The artifacts the package tests inspect: SEF_TEST_PACKAGE_DIR's when it holds them, else the ones `npm test`'s set-up
// step built into .package-cache/test-artifacts-<stamp>/ (built here when none is current, side by side, compressed
// only where a test installs or measures them: test/setup/README.md). "Current" = built from the
// same bytes of the inputs (src/, infra/, package.json, package-lock.json; what git sees, so no build output; no
// Markdown): a content hash, so an edit rebuilds them and a commit that changes none of them does not.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { buildArtifacts, type Target } from "../../infra/package/main.js";

export const repoRoot = resolve(import.meta.dirname, "../..");
/** The agent package's version: the one the artifacts carry. */
export const packageVersion = (JSON.parse(readFileSync(join(repoRoot, "src", "agent", "package.json"), "utf8")) as { version: string }).version;

/** The version of the older build the package tests upgrade from (built beside the current one). */
export const olderPackageVersion = "0.0.1";

export type LinuxTarget = "deb-x64" | "rpm-x64" | "tar-x64" | "txz-x64" | "fleet-tar-x64" | "deb-arm64" | "rpm-arm64" | "tar-arm64";
/** Every artifact the package tests inspect, at the current version. */
export const linuxTargets: readonly LinuxTarget[] = ["deb-x64", "rpm-x64", "tar-x64", "txz-x64", "fleet-tar-x64", "deb-arm64", "rpm-arm64", "tar-arm64"];
/**
 * Packages the tests only inspect (architecture fields, the runtime's ELF machine), never install or measure: built
 * with their payload not compressed (`stored`). The rest is built as a release compresses it, on every core (`fast`).
 */
export const inspectedOnly: readonly LinuxTarget[] = ["deb-arm64", "rpm-arm64"];
/** The targets also built at {@link olderPackageVersion}, stored: what the upgrade tests start from (installed only). */
export const olderTargets: readonly LinuxTarget[] = ["deb-x64", "rpm-x64"];

const fleetVersion = (JSON.parse(readFileSync(join(repoRoot, "src/fleet/package.json"), "utf8")) as { version: string }).version;

/** The file name `npm run package` gives a target's artifact at `version` (the fleet's carries the fleet's version). */
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
    case "fleet-tar-x64":
      return `sef-fleet-${fleetVersion}-linux-x64.tar.gz`;
  }
}

/** Whether `dir` holds the whole set: every target at the current version and the older builds. */
function holdsWholeSet(dir: string): boolean {
  return linuxTargets.every((t) => existsSync(join(dir, artifactName(t)))) && olderTargets.every((t) => existsSync(join(dir, artifactName(t, olderPackageVersion))));
}

/** What the artifacts are built from: the bundle's sources, the packaging code and files, the pinned dependencies. */
const inputRoots = ["src", "infra", "package.json", "package-lock.json"];
const cacheRoot = join(repoRoot, ".package-cache");
const cachedDirPrefix = "test-artifacts-";

/**
 * Repository-relative paths of every input file git sees (tracked or new; not ignored: no dist/, node_modules/),
 * sorted. Markdown is left out: no artifact carries a doc from src/ or infra/.
 */
function inputFiles(root: string): string[] {
  const listed = spawnSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", ...inputRoots, ":(exclude)*.md"], { cwd: root, encoding: "utf8", maxBuffer: 1 << 26 });
  if (listed.status !== 0) throw new Error(`git ls-files failed (the artifacts' inputs are the files git sees): ${listed.stderr}`);
  return [...new Set(listed.stdout.split("\0"))].filter((file) => file !== "" && existsSync(join(root, file))).sort();
}

/** A hash of the inputs' paths and bytes (a few MB: tens of milliseconds). */
export function inputsStamp(root: string = repoRoot): string {
  const hash = createHash("sha256");
  for (const file of inputFiles(root)) hash.update(`${file}\0`).update(readFileSync(join(root, file))).update("\0");
  return hash.digest("hex").slice(0, 16);
}

/**
 * The directory holding the Linux artifacts of the current inputs (every target, and the older upgrade builds): reused when it exists, else built (with
 * `npm run package`'s code) into a scratch directory and renamed into place, so a concurrent builder never sees half
 * a set; older sets are deleted. `log` hears what is happening (packaging takes minutes on a small machine).
 */
export async function currentTestArtifacts(log: (line: string) => void = () => undefined): Promise<string> {
  const stamp = inputsStamp();
  const dir = join(cacheRoot, cachedDirPrefix + stamp);
  if (holdsWholeSet(dir)) {
    log(`package artifacts: reusing ${relative(repoRoot, dir)} (built from the current src/, infra/, package.json, package-lock.json)`);
    return dir;
  }
  rmSync(dir, { recursive: true, force: true }); // an incomplete set (a file deleted by hand)
  mkdirSync(cacheRoot, { recursive: true });
  const scratch = mkdtempSync(join(cacheRoot, "building-"));
  const startedMs = performance.now();
  log(`package artifacts: building ${linuxTargets.join(" ")} into ${relative(repoRoot, dir)} (inputs changed or none built yet; takes a few minutes)`);
  try {
    const progress = (step: string): void => log(`package artifacts: ${step}`);
    await Promise.all([
      buildArtifacts({ repoRoot, targets: linuxTargets as Target[], outDir: scratch, progress, compression: (target) => (inspectedOnly.includes(target as LinuxTarget) ? "stored" : "fast") }),
      buildArtifacts({ repoRoot, targets: olderTargets as Target[], outDir: scratch, progress: (step) => progress(`${olderPackageVersion}: ${step}`), version: olderPackageVersion, compression: "stored" }),
    ]);
    try {
      renameSync(scratch, dir);
    } catch (err) {
      // Another process finished the same set first: keep theirs.
      if (!holdsWholeSet(dir)) throw err;
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  for (const entry of readdirSync(cacheRoot)) {
    if (entry.startsWith(cachedDirPrefix) && entry !== cachedDirPrefix + stamp) rmSync(join(cacheRoot, entry), { recursive: true, force: true });
  }
  log(`package artifacts: built in ${Math.round((performance.now() - startedMs) / 1000)} s`);
  return dir;
}

/**
 * Paths of the requested artifacts at `version`: SEF_TEST_PACKAGE_DIR's when it holds them all, else the current cached
 * set.
 */
export async function linuxArtifacts(targets: readonly LinuxTarget[], version = packageVersion): Promise<Record<string, string>> {
  const prebuilt = process.env.SEF_TEST_PACKAGE_DIR;
  const dir = prebuilt !== undefined && targets.every((t) => existsSync(join(prebuilt, artifactName(t, version)))) ? prebuilt : await currentTestArtifacts();
  return Object.fromEntries(targets.map((t) => [t, join(dir, artifactName(t, version))]));
}

/** The ELF machine (e_machine) of an executable's header: 62 x86-64, 183 AArch64. */
export function elfMachine(header: Buffer): number {
  if (header.length < 20 || header.readUInt32BE(0) !== 0x7f454c46) throw new Error("not an ELF file");
  return header[5] === 1 ? header.readUInt16LE(18) : header.readUInt16BE(18);
}
