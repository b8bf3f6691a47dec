// The artifacts the package tests inspect: SEF_TEST_PACKAGE_DIR's when it holds them, else the ones `npm test`'s set-up
// step built into .package-cache/test-artifacts-<stamp>/ (built here when none is current, side by side, compressed
// only where a test installs or measures them: test/setup/README.md). "Current" = built from the
// same bytes of the inputs (src/, infra/, package.json, package-lock.json; what git sees, so no build output; no
// Markdown): a content hash, so an edit rebuilds them and a commit that changes none of them does not.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { join, relative, resolve } from "node:path";
import { buildArtifacts, type Target } from "../../infra/package/main.js";
import type { CompressionProfile } from "../../infra/package/compression.js";

export const repoRoot = resolve(import.meta.dirname, "../..");
/** The agent package's version: the one the artifacts carry. */
export const packageVersion = (
  JSON.parse(readFileSync(join(repoRoot, "src", "agent", "package.json"), "utf8")) as { version: string }
).version;

/** The version of the older build the package tests upgrade from (built beside the current one). */
export const olderPackageVersion = "0.0.1";

export type LinuxTarget =
  "deb-x64" | "rpm-x64" | "tar-x64" | "txz-x64" | "fleet-tar-x64" | "deb-arm64" | "rpm-arm64" | "tar-arm64";
/** Every artifact the package tests inspect, at the current version. */
export const linuxTargets: readonly LinuxTarget[] = [
  "deb-x64",
  "rpm-x64",
  "tar-x64",
  "txz-x64",
  "fleet-tar-x64",
  "deb-arm64",
  "rpm-arm64",
  "tar-arm64",
];
/**
 * How each artifact of the set is compressed (infra/package/compression.ts), by what the tests do with it: as a release
 * compresses it, on every core (`fast`), when they compare it with a release build or hold its size to the budget; at
 * the lowest levels (`quick`) when they only install, unpack or run it; not at all (`stored`) when they only inspect it
 * (architecture fields, the runtime's ELF machine). The .deb stands for the size of the .rpm and the .tar.xz: the same
 * files, compressed by the same xz at the same level in a release.
 */
export const testCompression: Readonly<Record<LinuxTarget, CompressionProfile>> = {
  "deb-x64": "fast", // byte for byte a release's: at most 35 MiB
  "tar-x64": "fast", // rebuilt with the release profile: the same bytes
  "txz-x64": "quick", // the .tar.gz's tar stream; installed by install.sh
  "rpm-x64": "quick", // installed, upgraded to
  "fleet-tar-x64": "quick", // unpacked into the fleet image
  "tar-arm64": "quick", // unpacked and run under qemu-user
  "deb-arm64": "stored",
  "rpm-arm64": "stored",
};
/** The targets also built at {@link olderPackageVersion}, stored: what the upgrade tests start from (installed only). */
export const olderTargets: readonly LinuxTarget[] = ["deb-x64", "rpm-x64"];

const fleetVersion = (JSON.parse(readFileSync(join(repoRoot, "src/fleet/package.json"), "utf8")) as { version: string })
  .version;

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
  return (
    linuxTargets.every((t) => existsSync(join(dir, artifactName(t)))) &&
    olderTargets.every((t) => existsSync(join(dir, artifactName(t, olderPackageVersion))))
  );
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
  const listed = spawnSync(
    "git",
    ["ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", ...inputRoots, ":(exclude)*.md"],
    { cwd: root, encoding: "utf8", maxBuffer: 1 << 26 },
  );
  if (listed.status !== 0)
    throw new Error(`git ls-files failed (the artifacts' inputs are the files git sees): ${listed.stderr}`);
  return [...new Set(listed.stdout.split("\0"))].filter((file) => file !== "" && existsSync(join(root, file))).sort();
}

/** A hash of the inputs' paths and bytes (a few MB: tens of milliseconds). */
export function inputsStamp(root: string = repoRoot): string {
  const hash = createHash("sha256");
  for (const file of inputFiles(root))
    hash
      .update(`${file}\0`)
      .update(readFileSync(join(root, file)))
      .update("\0");
  return hash.digest("hex").slice(0, 16);
}

/** The directory of the current inputs' whole set when it is there (said to `log`), else undefined. */
export function currentTestArtifactsIfReady(
  log: (line: string) => void = () => undefined,
  stamp = inputsStamp(),
): string | undefined {
  const dir = join(cacheRoot, cachedDirPrefix + stamp);
  if (!holdsWholeSet(dir)) return undefined;
  log(
    `package artifacts: reusing ${relative(repoRoot, dir)} (built from the current src/, infra/, package.json, package-lock.json)`,
  );
  return dir;
}

/** Where a build of the set `stamp` in progress writes its builder's pid (and removes it when done). */
const buildingMarker = (stamp: string): string => join(cacheRoot, `${cachedDirPrefix}${stamp}.building`);
/** The log of a build started in the background by the set-up step. */
export const backgroundBuildLog = join(cacheRoot, "build.log");
/** How long a test waits for another process's build of the set before it gives up. */
const waitForBuilderMs = 45 * 60_000;

/** Marks the set `stamp` as being built by `pid`: other processes wait for it instead of building it too. */
export function claimBuild(stamp: string, pid: number): void {
  mkdirSync(cacheRoot, { recursive: true });
  writeFileSync(buildingMarker(stamp), `${pid}\n`);
}

/** The pid of a live process building the set `stamp`, if any. */
function liveBuilder(stamp: string): number | undefined {
  let pid: number;
  try {
    pid = Number(readFileSync(buildingMarker(stamp), "utf8").trim());
    process.kill(pid, 0);
  } catch {
    return undefined;
  }
  return pid;
}

/** Waits while another live process builds the set `stamp` (it ends with the set in place, or it died). */
async function waitForOtherBuilder(stamp: string, dir: string, log: (line: string) => void): Promise<void> {
  const deadlineMs = performance.now() + waitForBuilderMs;
  let builder = liveBuilder(stamp);
  if (builder === undefined || builder === process.pid) return;
  log(
    `package artifacts: waiting for the build in progress (pid ${builder}; log: ${relative(repoRoot, backgroundBuildLog)})`,
  );
  while (builder !== undefined && builder !== process.pid && !holdsWholeSet(dir)) {
    if (performance.now() > deadlineMs)
      throw new Error(`the package artifacts' build by pid ${builder} took over ${waitForBuilderMs / 60_000} min`);
    await new Promise((resolve) => setTimeout(resolve, 2000));
    builder = liveBuilder(stamp);
  }
}

/**
 * The directory holding the Linux artifacts of the current inputs (every target, and the older upgrade builds): reused
 * when it exists; awaited when another process is building it (the set-up step builds it in the background during
 * `npm test`); else built (with `npm run package`'s code) into a scratch directory and renamed into place, so a
 * concurrent builder never sees half a set; older sets are deleted. `log` hears what is happening.
 */
export async function currentTestArtifacts(log: (line: string) => void = () => undefined): Promise<string> {
  const stamp = inputsStamp();
  const dir = join(cacheRoot, cachedDirPrefix + stamp);
  await waitForOtherBuilder(stamp, dir, log);
  if (currentTestArtifactsIfReady(log, stamp) !== undefined) return dir;
  claimBuild(stamp, process.pid);
  try {
    await buildSet(stamp, dir, log);
  } finally {
    rmSync(buildingMarker(stamp), { force: true });
  }
  return dir;
}

/** Builds the whole set into `dir` (see {@link currentTestArtifacts}). */
async function buildSet(stamp: string, dir: string, log: (line: string) => void): Promise<void> {
  rmSync(dir, { recursive: true, force: true }); // an incomplete set (a file deleted by hand)
  const scratch = mkdtempSync(join(cacheRoot, "building-"));
  const startedMs = performance.now();
  log(
    `package artifacts: building ${linuxTargets.join(" ")} into ${relative(repoRoot, dir)} (inputs changed or none built yet; takes a few minutes)`,
  );
  try {
    const progress = (step: string): void => log(`package artifacts: ${step}`);
    await Promise.all([
      buildArtifacts({
        repoRoot,
        targets: linuxTargets as Target[],
        outDir: scratch,
        progress,
        compression: (target) => testCompression[target as LinuxTarget],
      }),
      buildArtifacts({
        repoRoot,
        targets: olderTargets as Target[],
        outDir: scratch,
        progress: (step) => progress(`${olderPackageVersion}: ${step}`),
        version: olderPackageVersion,
        compression: "stored",
        integrity: false, // the set's SHA256SUMS and SBOMs are the current build's
      }),
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
    if (entry.startsWith(cachedDirPrefix) && entry !== cachedDirPrefix + stamp && !entry.endsWith(".building"))
      rmSync(join(cacheRoot, entry), { recursive: true, force: true });
  }
  log(`package artifacts: built in ${Math.round((performance.now() - startedMs) / 1000)} s`);
}

/**
 * Paths of the requested artifacts at `version`: SEF_TEST_PACKAGE_DIR's when it holds them all, else the current cached
 * set.
 */
export async function linuxArtifacts(
  targets: readonly LinuxTarget[],
  version = packageVersion,
): Promise<Record<string, string>> {
  const prebuilt = process.env.SEF_TEST_PACKAGE_DIR;
  const dir =
    prebuilt !== undefined && targets.every((t) => existsSync(join(prebuilt, artifactName(t, version))))
      ? prebuilt
      : await currentTestArtifacts();
  return Object.fromEntries(targets.map((t) => [t, join(dir, artifactName(t, version))]));
}

/** The ELF machine (e_machine) of an executable's header: 62 x86-64, 183 AArch64. */
export function elfMachine(header: Buffer): number {
  if (header.length < 20 || header.readUInt32BE(0) !== 0x7f454c46) throw new Error("not an ELF file");
  return header[5] === 1 ? header.readUInt16LE(18) : header.readUInt16BE(18);
}
