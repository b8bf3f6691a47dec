// `npm run package`: bundles the agent and builds the artifacts into artifacts/ (reproducible: same inputs, same
// bytes). `npm run package -- deb-x64 tar-x64` builds only the named targets; the default is every target.
// SEF_PACKAGE_VERSION overrides package.json's version (the package tests build an older one to upgrade from).
import { mkdirSync, readFileSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { bundleAgent } from "./bundle.js";
import { buildDeb, buildRpm, buildTarball, stagePackageRoot, type LinuxArch } from "./linux.js";
import { sourceDateEpoch } from "./reproducible.js";
import { fetchRuntime } from "./runtime.js";
import { buildWindowsMsi } from "./windows-msi.js";
import { buildWindowsZip } from "./windows.js";

export const allTargets = ["deb-x64", "deb-arm64", "rpm-x64", "rpm-arm64", "tar-x64", "tar-arm64", "txz-x64", "txz-arm64", "zip-win-x64", "msi-win-x64"] as const;
export type Target = (typeof allTargets)[number];

export interface PackageOptions {
  readonly repoRoot: string;
  readonly targets: readonly Target[];
  /** Where artifacts are written (default `<repo>/artifacts`). */
  readonly outDir?: string;
  /** Runtime download cache (default `<repo>/.package-cache`, gitignored). */
  readonly cacheDir?: string;
  /** The mtime stamped on every file (default: SOURCE_DATE_EPOCH, else the last commit's time). */
  readonly epochS?: number;
  /** The version stamped on the artifacts and the agent (default: package.json's). */
  readonly version?: string;
}

export async function buildArtifacts(options: PackageOptions): Promise<string[]> {
  const { repoRoot, targets } = options;
  const outDir = options.outDir ?? join(repoRoot, "artifacts");
  const cacheDir = options.cacheDir ?? join(repoRoot, ".package-cache");
  const workDir = join(outDir, ".work");
  const version = options.version ?? (JSON.parse(readFileSync(join(repoRoot, "src", "agent", "package.json"), "utf8")) as { version: string }).version;
  const epochS = options.epochS ?? sourceDateEpoch(repoRoot);
  rmSync(workDir, { recursive: true, force: true });
  mkdirSync(workDir, { recursive: true });
  const bundleDir = join(workDir, "bundle");
  await bundleAgent(repoRoot, bundleDir, version);

  const written: string[] = [];
  for (const arch of ["x64", "arm64"] as const satisfies readonly LinuxArch[]) {
    const wanted = (kind: string): boolean => targets.includes(`${kind}-${arch}` as Target);
    if (!wanted("deb") && !wanted("rpm") && !wanted("tar") && !wanted("txz")) continue;
    const inputs = { repoRoot, version, bundleDir, runtime: fetchRuntime(`linux-${arch}`, cacheDir), arch, epochS, workDir, outDir };
    if (wanted("deb") || wanted("rpm")) {
      const root = stagePackageRoot(inputs);
      if (wanted("deb")) written.push(buildDeb(inputs, root));
      if (wanted("rpm")) written.push(buildRpm(inputs, root));
    }
    if (wanted("tar")) written.push(buildTarball(inputs, "gzip"));
    if (wanted("txz")) written.push(buildTarball(inputs, "xz"));
  }
  if (targets.includes("zip-win-x64") || targets.includes("msi-win-x64")) {
    const nodeLicense = fetchRuntime("linux-x64", cacheDir).license;
    const inputs = { repoRoot, version, bundleDir, runtime: fetchRuntime("win-x64", cacheDir), nodeLicense, cacheDir, epochS, outDir };
    if (targets.includes("zip-win-x64")) written.push(buildWindowsZip(inputs));
    if (targets.includes("msi-win-x64")) written.push(buildWindowsMsi({ ...inputs, workDir }));
  }
  rmSync(workDir, { recursive: true, force: true });
  return written;
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const requested = process.argv.slice(2);
  const unknown = requested.filter((t) => !(allTargets as readonly string[]).includes(t));
  if (unknown.length > 0) {
    console.error(`unknown target(s): ${unknown.join(", ")} (known: ${allTargets.join(", ")})`);
    process.exit(2);
  }
  const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
  const version = process.env.SEF_PACKAGE_VERSION;
  if (version !== undefined && !/^\d+\.\d+\.\d+$/.test(version)) {
    console.error(`SEF_PACKAGE_VERSION must be MAJOR.MINOR.PATCH, not ${JSON.stringify(version)}`);
    process.exit(2);
  }
  const files = await buildArtifacts({ repoRoot, targets: requested.length > 0 ? (requested as Target[]) : allTargets, version });
  for (const file of files) console.log(file);
}
