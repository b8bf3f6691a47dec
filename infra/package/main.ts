// `npm run package`: bundles the agent (and, for the fleet-tar targets, the fleet service) and builds the artifacts into
// artifacts/ (reproducible: same inputs, same bytes). `npm run package -- deb-x64 tar-x64` builds only the named
// targets; the default is every target. SEF_PACKAGE_VERSION overrides the agent package's version (the package tests
// build an older one to upgrade from). Beside the artifacts: a CycloneDX SBOM for each and SHA256SUMS (integrity.ts).
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { bundleAgent, bundleFleet } from "./bundle.js";
import type { CompressionProfile } from "./compression.js";
import {
  buildDeb,
  buildFleetTarball,
  buildRpm,
  buildTarballs,
  stagePackageRoot,
  type LinuxArch,
  type LinuxInputs,
} from "./linux.js";
import { workspaceSbom, writeSbom, writeSha256Sums } from "./integrity.js";
import { sourceDateEpoch } from "./reproducible.js";
import { fetchRuntime, type Runtime } from "./runtime.js";
import { buildWindowsMsi } from "./windows-msi.js";
import { buildWindowsZip } from "./windows.js";

export const allTargets = [
  "deb-x64",
  "deb-arm64",
  "rpm-x64",
  "rpm-arm64",
  "tar-x64",
  "tar-arm64",
  "txz-x64",
  "txz-arm64",
  "zip-win-x64",
  "msi-win-x64",
  "fleet-tar-x64",
  "fleet-tar-arm64",
] as const;
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
  /** How the Linux artifacts are compressed, all alike or per target (default `release`; see compression.ts). */
  readonly compression?: CompressionProfile | ((target: Target) => CompressionProfile);
  /** Write each artifact's SBOM (<artifact>.cdx.json) and add them all to outDir's SHA256SUMS (default true). */
  readonly integrity?: boolean;
}

/** What every artifact of one build shares. */
interface BuildContext {
  readonly repoRoot: string;
  readonly targets: readonly Target[];
  readonly outDir: string;
  readonly cacheDir: string;
  readonly workDir: string;
  readonly version: string;
  readonly epochS: number;
  readonly compressionOf: (target: Target) => CompressionProfile;
  readonly progress: (step: string) => void;
}

/**
 * Builds `targets` into `outDir` and returns their paths (Linux per architecture: .deb, .rpm, .tar.gz, .tar.xz; then
 * Windows; then the fleet's tarballs). The Linux artifacts build side by side; the bytes do not depend on it.
 */
export async function buildArtifacts(options: PackageOptions): Promise<string[]> {
  const { repoRoot, targets } = options;
  const outDir = options.outDir ?? join(repoRoot, "artifacts");
  mkdirSync(outDir, { recursive: true });
  const context: BuildContext = {
    repoRoot,
    targets,
    outDir,
    cacheDir: options.cacheDir ?? join(repoRoot, ".package-cache"),
    workDir: mkdtempSync(join(outDir, ".work-")),
    version: options.version ?? packageVersionOf(repoRoot, "agent"),
    epochS: options.epochS ?? sourceDateEpoch(repoRoot),
    compressionOf:
      typeof options.compression === "function"
        ? options.compression
        : (): CompressionProfile => (options.compression as CompressionProfile | undefined) ?? "release",
    progress: options.progress ?? ((): void => undefined),
  };
  try {
    const runtimes = linuxRuntimes(context);
    const bundles = await bundle(context);
    const linux = (["x64", "arm64"] as const).map((arch) => buildLinux(context, arch, bundles.agent, runtimes[arch]));
    const fleet = (["x64", "arm64"] as const)
      .filter((arch) => targets.includes(`fleet-tar-${arch}`))
      .map((arch) => buildFleet(context, arch, bundles.fleet, runtimes[arch]!));
    const agentFiles = [...(await Promise.all(linux)).flat(), ...buildWindows(context, bundles.agent)];
    const fleetFiles = await Promise.all(fleet);
    const built = [...agentFiles, ...fleetFiles];
    return options.integrity === false ? built : [...built, ...(await writeIntegrity(context, agentFiles, fleetFiles))];
  } finally {
    rmSync(context.workDir, { recursive: true, force: true });
  }
}

/** Each artifact's SBOM, then SHA256SUMS over the artifacts and SBOMs; returns the files written. */
async function writeIntegrity(
  context: BuildContext,
  agentFiles: readonly string[],
  fleetFiles: readonly string[],
): Promise<string[]> {
  const { repoRoot, epochS, progress } = context;
  progress("writing the SBOMs (npm sbom, CycloneDX) and SHA256SUMS");
  const sboms = [
    ...(agentFiles.length === 0 ? [] : [workspaceSbom(repoRoot, "src/agent")]).flatMap((base) =>
      agentFiles.map((artifact) => writeSbom(base, { artifact, name: "sef", version: context.version, epochS })),
    ),
    ...(fleetFiles.length === 0 ? [] : [workspaceSbom(repoRoot, "src/fleet")]).flatMap((base) =>
      fleetFiles.map((artifact) =>
        writeSbom(base, { artifact, name: "sef-fleet", version: packageVersionOf(repoRoot, "fleet"), epochS }),
      ),
    ),
  ];
  const sums = await writeSha256Sums([...agentFiles, ...fleetFiles, ...sboms]);
  return [...sboms, ...(sums === undefined ? [] : [sums])];
}

function packageVersionOf(repoRoot: string, pkg: string): string {
  return (JSON.parse(readFileSync(join(repoRoot, "src", pkg, "package.json"), "utf8")) as { version: string }).version;
}

/**
 * The Linux runtimes the targets need, fetched (or found in the cache) before anything builds: a fetch holds the event
 * loop, which the builds need to feed their compressors.
 */
function linuxRuntimes(context: BuildContext): Partial<Record<LinuxArch, Runtime>> {
  const archs = (["x64", "arm64"] as const).filter((arch) =>
    context.targets.some((t) => new RegExp(`^(deb|rpm|tar|txz|fleet-tar)-${arch}$`).test(t)),
  );
  return Object.fromEntries(
    archs.map((arch) => {
      context.progress(`fetching the Node.js runtime for linux-${arch} (npm pack, cached in ${context.cacheDir})`);
      return [arch, fetchRuntime(`linux-${arch}`, context.cacheDir)];
    }),
  );
}

/** The agent's and the fleet's bundles, each only when a target needs it, built side by side. */
async function bundle(context: BuildContext): Promise<{ agent: string; fleet: string }> {
  const agent = join(context.workDir, "bundle");
  const fleet = join(context.workDir, "fleet-bundle");
  const needsAgent = context.targets.some((t) => !t.startsWith("fleet-"));
  const needsFleet = context.targets.some((t) => t.startsWith("fleet-"));
  if (needsAgent) context.progress("bundling the agent");
  await Promise.all([
    needsAgent ? bundleAgent(context.repoRoot, agent, context.version) : undefined,
    needsFleet ? bundleFleet(context.repoRoot, fleet) : undefined,
  ]);
  return { agent, fleet };
}

/** One architecture's .deb, .rpm, .tar.gz and .tar.xz (those wanted), side by side from one staged tree. */
async function buildLinux(
  context: BuildContext,
  arch: LinuxArch,
  bundleDir: string,
  runtime: Runtime | undefined,
): Promise<string[]> {
  const wanted = (kind: string): boolean => context.targets.includes(`${kind}-${arch}` as Target);
  if (runtime === undefined || (!wanted("deb") && !wanted("rpm") && !wanted("tar") && !wanted("txz"))) return [];
  const { repoRoot, version, epochS, workDir, outDir, progress } = context;
  const inputs: Omit<LinuxInputs, "compression"> = {
    repoRoot,
    version,
    bundleDir,
    runtime,
    arch,
    epochS,
    workDir,
    outDir,
  };
  const as = (kind: string): LinuxInputs => ({
    ...inputs,
    compression: context.compressionOf(`${kind}-${arch}` as Target),
  });
  const root = wanted("deb") || wanted("rpm") ? stagePackageRoot(as("deb")) : "";
  const tarballs = (["tar", "txz"] as const)
    .filter(wanted)
    .map((kind) => [kind === "tar" ? "gzip" : "xz", as(kind).compression] as const);
  const builds = [
    wanted("deb") ? step(progress, `.deb (${arch})`, () => buildDeb(as("deb"), root)) : undefined,
    wanted("rpm") ? step(progress, `.rpm (${arch})`, () => buildRpm(as("rpm"), root)) : undefined,
    tarballs.length > 0
      ? step(progress, `${tarballs.map(([c]) => `.tar.${c === "gzip" ? "gz" : "xz"}`).join(" and ")} (${arch})`, () =>
          buildTarballs(inputs, tarballs),
        )
      : undefined,
  ];
  return (await Promise.all(builds)).flatMap((files) => files ?? []);
}

/** The fleet service's tarball for one architecture. */
function buildFleet(context: BuildContext, arch: LinuxArch, bundleDir: string, runtime: Runtime): Promise<string> {
  const { epochS, workDir, outDir } = context;
  const compression = context.compressionOf(`fleet-tar-${arch}` as Target);
  return buildFleetTarball({
    version: packageVersionOf(context.repoRoot, "fleet"),
    bundleDir,
    runtime,
    arch,
    epochS,
    workDir,
    outDir,
    compression,
  });
}

/** The zip and the MSI (those wanted). */
function buildWindows(context: BuildContext, bundleDir: string): string[] {
  const { repoRoot, version, cacheDir, epochS, outDir, workDir, targets } = context;
  if (!targets.includes("zip-win-x64") && !targets.includes("msi-win-x64")) return [];
  const nodeLicense = fetchRuntime("linux-x64", cacheDir).license;
  const inputs = {
    repoRoot,
    version,
    bundleDir,
    runtime: fetchRuntime("win-x64", cacheDir),
    nodeLicense,
    cacheDir,
    epochS,
    outDir,
  };
  return [
    ...(targets.includes("zip-win-x64") ? [buildWindowsZip(inputs)] : []),
    ...(targets.includes("msi-win-x64") ? [buildWindowsMsi({ ...inputs, workDir })] : []),
  ];
}

/** Runs one build between two progress lines (the second with its duration). */
async function step<T extends string | string[]>(
  progress: (step: string) => void,
  what: string,
  build: () => Promise<T>,
): Promise<T> {
  const startedMs = performance.now();
  progress(`building the ${what}`);
  const built = await build();
  progress(`built ${[built].flat().join(", ")} in ${Math.round((performance.now() - startedMs) / 1000)} s`);
  return built;
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
  const files = await buildArtifacts({
    repoRoot,
    targets: requested.length > 0 ? (requested as Target[]) : allTargets,
    version,
  });
  for (const file of files) console.log(file);
}
