// The artifacts the package tests inspect: SEF_TEST_PACKAGE_DIR's when it holds them, else the ones `npm test`'s set-up
// step built into .package-cache/test-artifacts-<stamp>/ (built here when none is current). "Current" = built from the
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

export type LinuxTarget = "deb-x64" | "rpm-x64" | "tar-x64" | "txz-x64" | "fleet-tar-x64";
export const linuxTargets: readonly LinuxTarget[] = ["deb-x64", "rpm-x64", "tar-x64", "txz-x64", "fleet-tar-x64"];

const fleetVersion = (JSON.parse(readFileSync(join(repoRoot, "src/fleet/package.json"), "utf8")) as { version: string }).version;

export const artifactNames: Readonly<Record<LinuxTarget, string>> = {
  "deb-x64": `sef_${packageVersion}_amd64.deb`,
  "rpm-x64": `sef-${packageVersion}-1.x86_64.rpm`,
  "tar-x64": `sef-${packageVersion}-linux-x64.tar.gz`,
  "txz-x64": `sef-${packageVersion}-linux-x64.tar.xz`,
  "fleet-tar-x64": `sef-fleet-${fleetVersion}-linux-x64.tar.gz`,
};

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
 * The directory holding the four x64 Linux artifacts of the current inputs: reused when it exists, else built (with
 * `npm run package`'s code) into a scratch directory and renamed into place, so a concurrent builder never sees half
 * a set; older sets are deleted. `log` hears what is happening (packaging takes minutes on a small machine).
 */
export async function currentTestArtifacts(log: (line: string) => void = () => undefined): Promise<string> {
  const stamp = inputsStamp();
  const dir = join(cacheRoot, cachedDirPrefix + stamp);
  if (linuxTargets.every((t) => existsSync(join(dir, artifactNames[t])))) {
    log(`package artifacts: reusing ${relative(repoRoot, dir)} (built from the current src/, infra/, package.json, package-lock.json)`);
    return dir;
  }
  rmSync(dir, { recursive: true, force: true }); // an incomplete set (a file deleted by hand)
  mkdirSync(cacheRoot, { recursive: true });
  const scratch = mkdtempSync(join(cacheRoot, "building-"));
  const startedMs = performance.now();
  log(`package artifacts: building ${linuxTargets.join(" ")} into ${relative(repoRoot, dir)} (inputs changed or none built yet; takes a few minutes)`);
  try {
    await buildArtifacts({ repoRoot, targets: linuxTargets as Target[], outDir: scratch, progress: (step) => log(`package artifacts: ${step}`) });
    try {
      renameSync(scratch, dir);
    } catch (err) {
      // Another process finished the same set first: keep theirs.
      if (!linuxTargets.every((t) => existsSync(join(dir, artifactNames[t])))) throw err;
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

/** Paths of the requested artifacts: SEF_TEST_PACKAGE_DIR's when it holds them all, else the current cached set. */
export async function linuxArtifacts(targets: readonly LinuxTarget[]): Promise<Record<string, string>> {
  const prebuilt = process.env.SEF_TEST_PACKAGE_DIR;
  const dir = prebuilt !== undefined && targets.every((t) => existsSync(join(prebuilt, artifactNames[t]))) ? prebuilt : await currentTestArtifacts();
  return Object.fromEntries(targets.map((t) => [t, join(dir, artifactNames[t])]));
}
