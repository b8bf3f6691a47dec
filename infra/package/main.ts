// `npm run package`: bundles the agent (and, for the fleet-tar targets, the fleet service) and builds the artifacts into
// artifacts/ (reproducible: same inputs, same bytes). `npm run package -- deb-x64 tar-x64` builds only the named
// targets; the default is every target. SEF_PACKAGE_VERSION overrides the agent package's version (the package tests
// build an older one to upgrade from).
import { mkdirSync, readFileSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { bundleAgent, bundleFleet } from "./bundle.js";
import { buildDeb, buildFleetTarball, buildRpm, buildTarball, stagePackageRoot, type LinuxArch } from "./linux.js";
import { sourceDateEpoch } from "./reproducible.js";
import { fetchRuntime } from "./runtime.js";
import { buildWindowsMsi } from "./windows-msi.js";
import { buildWindowsZip } from "./windows.js";

export const allTargets = ["deb-x64", "deb-arm64", "rpm-x64", "rpm-arm64", "tar-x64", "tar-arm64", "txz-x64", "txz-arm64", "zip-win-x64", "msi-win-x64", "fleet-tar-x64", "fleet-tar-arm64"] as const;
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
  /** Hears each step as it starts ("building sef_0.1.0_amd64.deb"): packaging takes minutes on a small machine. */
  readonly progress?: (step: string) => void;
  /** The version stamped on the agent's artifacts (default: the agent package's). */
  readonly version?: string;
}

export async function buildArtifacts(options: PackageOptions): Promise<string[]> {
  const { repoRoot, targets } = options;
  const outDir = options.outDir ?? join(repoRoot, "artifacts");
  const cacheDir = options.cacheDir ?? join(repoRoot, ".package-cache");
  const workDir = join(outDir, ".work");
  const versionOf = (pkg: string): string => (JSON.parse(readFileSync(join(repoRoot, "src", pkg, "package.json"), "utf8")) as { version: string }).version;
  const version = options.version ?? versionOf("agent");
  const epochS = options.epochS ?? sourceDateEpoch(repoRoot);
  rmSync(workDir, { recursive: true, force: true });
  mkdirSync(workDir, { recursive: true });
  const bundleDir = join(workDir, "bundle");
  const progress = options.progress ?? ((): void => undefined);
  if (targets.some((t) => !t.startsWith("fleet-"))) {
    progress("bundling the agent");
    await bundleAgent(repoRoot, bundleDir, version);
  }

  const written: string[] = [];
  for (const arch of ["x64", "arm64"] as const satisfies readonly LinuxArch[]) {
    const wanted = (kind: string): boolean => targets.includes(`${kind}-${arch}` as Target);
    if (!wanted("deb") && !wanted("rpm") && !wanted("tar") && !wanted("txz")) continue;
    progress(`fetching the Node.js runtime for linux-${arch} (npm pack, cached in ${cacheDir})`);
    const inputs = { repoRoot, version, bundleDir, runtime: fetchRuntime(`linux-${arch}`, cacheDir), arch, epochS, workDir, outDir };
    if (wanted("deb") || wanted("rpm")) {
      const root = stagePackageRoot(inputs);
      if (wanted("deb")) written.push(step(progress, `.deb (${arch})`, () => buildDeb(inputs, root)));
      if (wanted("rpm")) written.push(step(progress, `.rpm (${arch})`, () => buildRpm(inputs, root)));
    }
    if (wanted("tar")) written.push(step(progress, `.tar.gz (${arch})`, () => buildTarball(inputs, "gzip")));
    if (wanted("txz")) written.push(step(progress, `.tar.xz (${arch})`, () => buildTarball(inputs, "xz")));
  }
  if (targets.includes("zip-win-x64") || targets.includes("msi-win-x64")) {
    const nodeLicense = fetchRuntime("linux-x64", cacheDir).license;
    const inputs = { repoRoot, version, bundleDir, runtime: fetchRuntime("win-x64", cacheDir), nodeLicense, cacheDir, epochS, outDir };
    if (targets.includes("zip-win-x64")) written.push(buildWindowsZip(inputs));
    if (targets.includes("msi-win-x64")) written.push(buildWindowsMsi({ ...inputs, workDir }));
  }
  const fleetArchs = (["x64", "arm64"] as const).filter((arch) => targets.includes(`fleet-tar-${arch}`));
  if (fleetArchs.length > 0) {
    const fleetBundleDir = join(workDir, "fleet-bundle");
    await bundleFleet(repoRoot, fleetBundleDir);
    for (const arch of fleetArchs) {
      const runtime = fetchRuntime(`linux-${arch}`, cacheDir);
      written.push(buildFleetTarball({ version: versionOf("fleet"), bundleDir: fleetBundleDir, runtime, arch, epochS, workDir, outDir }));
    }
  }
  rmSync(workDir, { recursive: true, force: true });
  return written;
}

/** Runs one artifact's build between two progress lines (the second with its duration). */
function step(progress: (step: string) => void, what: string, build: () => string): string {
  const startedMs = performance.now();
  progress(`building the ${what}`);
  const file = build();
  progress(`built ${file} in ${Math.round((performance.now() - startedMs) / 1000)} s`);
  return file;
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
