// Linux artifacts: the agent's staged tree per architecture (runtime, bundle, /usr/bin/sef, unit, config) archived as a
// .deb (dpkg-deb), an .rpm (rpmbuild) and a relocatable .tar.gz and .tar.xz (one tar stream), all from the same files
// and the same mtimes; and the fleet service's tarball (runtime + its own bundle), the contents of its container image.
// Each build is awaited on its own, so independent artifacts build side by side.
import { execFileSync } from "node:child_process";
import { copyFileSync, cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { run } from "./child-process.js";
import { debCompressionOptions, rpmPayload, type CompressionProfile, type TarCompression } from "./compression.js";
import { normalizeTree, writeTarballs } from "./reproducible.js";
import type { Runtime } from "./runtime.js";

export type LinuxArch = "x64" | "arm64";

export const debArch: Readonly<Record<LinuxArch, string>> = { x64: "amd64", arm64: "arm64" };
export const rpmArch: Readonly<Record<LinuxArch, string>> = { x64: "x86_64", arm64: "aarch64" };

export interface LinuxInputs {
  readonly repoRoot: string;
  readonly version: string;
  /** The bundle: the agent's (`sef.mjs` + chunks/) or the fleet's (`sef-fleet.mjs` + chunks/). */
  readonly bundleDir: string;
  readonly runtime: Runtime;
  readonly arch: LinuxArch;
  readonly epochS: number;
  readonly workDir: string;
  readonly outDir: string;
  readonly compression: CompressionProfile;
}

const linuxDir = (repoRoot: string): string => join(repoRoot, "infra", "linux");

/** Copies a bundle, the Node runtime and its licence into `lib`. */
function stageBundle(inputs: Pick<LinuxInputs, "bundleDir" | "runtime">, lib: string): void {
  mkdirSync(lib, { recursive: true });
  cpSync(inputs.bundleDir, lib, { recursive: true });
  copyFileSync(inputs.runtime.binary, join(lib, "node"));
  copyFileSync(inputs.runtime.license, join(lib, "LICENSE.node"));
}

/** The root-owned hook unit, its polkit rule and the agent's side of it, shipped for an administrator to install. */
const privilegedHookFiles = ["sef-hook@.service", "50-sef-hooks.rules", "sef-privileged-hook"];

/** Copies the agent (bundle + runtime) and the wrapper into `<root>/<prefix>/{bin,lib/sef}`. */
function stageAgent(inputs: Omit<LinuxInputs, "compression">, prefixDir: string): void {
  mkdirSync(join(prefixDir, "bin"), { recursive: true });
  stageBundle(inputs, join(prefixDir, "lib", "sef"));
  copyFileSync(join(linuxDir(inputs.repoRoot), "sef"), join(prefixDir, "bin", "sef"));
  const share = join(prefixDir, "share", "sef");
  mkdirSync(share, { recursive: true });
  for (const file of ["sef.env", "sef.service", "config.json", ...privilegedHookFiles]) {
    copyFileSync(join(linuxDir(inputs.repoRoot), file), join(share, file));
  }
}

/** The package tree: /usr/{bin,lib/sef,share/sef}, the unit under /usr/lib/systemd/system, the config in /etc/sef. */
export function stagePackageRoot(inputs: LinuxInputs): string {
  const root = join(inputs.workDir, `root-${inputs.arch}`);
  rmSync(root, { recursive: true, force: true });
  stageAgent(inputs, join(root, "usr"));
  mkdirSync(join(root, "usr", "lib", "systemd", "system"), { recursive: true });
  copyFileSync(
    join(linuxDir(inputs.repoRoot), "sef.service"),
    join(root, "usr", "lib", "systemd", "system", "sef.service"),
  );
  mkdirSync(join(root, "etc", "sef"), { recursive: true });
  copyFileSync(join(linuxDir(inputs.repoRoot), "config.json"), join(root, "etc", "sef", "config.json"));
  normalizeTree(root, inputs.epochS, { "etc/sef": 0o750, "etc/sef/config.json": 0o640 });
  return root;
}

export async function buildDeb(inputs: LinuxInputs, root: string): Promise<string> {
  const pkgDir = join(inputs.workDir, `deb-${inputs.arch}`);
  rmSync(pkgDir, { recursive: true, force: true });
  cpSync(root, pkgDir, { recursive: true, preserveTimestamps: true });
  const control = join(pkgDir, "DEBIAN");
  mkdirSync(control);
  const installedKb = Math.ceil(
    Number(execFileSync("du", ["-sk", "--apparent-size", root], { encoding: "utf8" }).split("\t")[0]),
  );
  writeFileSync(
    join(control, "control"),
    [
      "Package: sef",
      `Version: ${inputs.version}`,
      `Architecture: ${debArch[inputs.arch]}`,
      "Maintainer: sef maintainers <sef@localhost>",
      `Installed-Size: ${installedKb}`,
      "Depends: libc6 (>= 2.28), libstdc++6 (>= 10), libgcc-s1 | libgcc1, adduser | passwd",
      "Section: admin",
      "Priority: optional",
      "Description: Scheduled Events Forwarder (Azure IMDS) agent",
      " Polls the Azure Instance Metadata Service's Scheduled Events and forwards each event's state",
      " transitions to Event Hubs, Log Analytics, a webhook, a JSONL file or stdout. Ships its own Node.js runtime.",
      "",
    ].join("\n"),
  );
  writeFileSync(join(control, "conffiles"), "/etc/sef/config.json\n");
  for (const script of ["postinst", "prerm", "postrm"])
    copyFileSync(join(linuxDir(inputs.repoRoot), "deb", script), join(control, script));
  normalizeTree(pkgDir, inputs.epochS, {
    "etc/sef": 0o750,
    "etc/sef/config.json": 0o640,
    "DEBIAN/postinst": 0o755,
    "DEBIAN/prerm": 0o755,
    "DEBIAN/postrm": 0o755,
  });
  const out = join(inputs.outDir, `sef_${inputs.version}_${debArch[inputs.arch]}.deb`);
  await run("dpkg-deb", ["--root-owner-group", ...debCompressionOptions(inputs.compression), "--build", pkgDir, out], {
    env: { ...process.env, SOURCE_DATE_EPOCH: String(inputs.epochS) },
  });
  return out;
}

function scriptlet(repoRoot: string, name: string): string {
  return readFileSync(join(linuxDir(repoRoot), "rpm", `${name}.sh`), "utf8").trimEnd();
}

export async function buildRpm(inputs: LinuxInputs, root: string): Promise<string> {
  const top = join(inputs.workDir, `rpm-${inputs.arch}`);
  rmSync(top, { recursive: true, force: true });
  mkdirSync(join(top, "SPECS"), { recursive: true });
  const spec = [
    "Name: sef",
    `Version: ${inputs.version}`,
    "Release: 1",
    "Summary: Scheduled Events Forwarder (Azure IMDS) agent",
    "License: MIT",
    "AutoReqProv: no",
    "Requires: glibc >= 2.28, libstdc++, shadow-utils",
    "%global debug_package %{nil}",
    "%global __os_install_post %{nil}",
    "%global _build_id_links none",
    "%description",
    "Polls the Azure Instance Metadata Service's Scheduled Events and forwards each event's state transitions",
    "to Event Hubs, Log Analytics, a webhook, a JSONL file or stdout. Ships its own Node.js runtime.",
    "%install",
    `cp -a ${root}/. %{buildroot}/`,
    "%pre",
    scriptlet(inputs.repoRoot, "pre"),
    "%post",
    scriptlet(inputs.repoRoot, "post"),
    "%preun",
    scriptlet(inputs.repoRoot, "preun"),
    "%postun",
    scriptlet(inputs.repoRoot, "postun"),
    "%files",
    "%attr(0755,root,root) /usr/bin/sef",
    "/usr/lib/sef",
    "/usr/share/sef",
    "%attr(0644,root,root) /usr/lib/systemd/system/sef.service",
    "%dir %attr(0750,root,sef) /etc/sef",
    "%config(noreplace) %attr(0640,root,sef) /etc/sef/config.json",
    "",
  ].join("\n");
  const specFile = join(top, "SPECS", "sef.spec");
  writeFileSync(specFile, spec);
  await run(
    "rpmbuild",
    [
      "-bb",
      "--quiet",
      "--target",
      `${rpmArch[inputs.arch]}-linux`,
      specFile,
      "--define",
      `_topdir ${top}`,
      "--define",
      "_buildhost sef-build",
      "--define",
      "use_source_date_epoch_as_buildtime 1",
      "--define",
      "clamp_mtime_to_source_date_epoch 1",
      "--define",
      `_binary_payload ${rpmPayload(inputs.compression)}`,
      "--define",
      "_source_payload w6.xzdio",
      "--define",
      "_buildrootdir %{_topdir}/BUILDROOT",
    ],
    { env: { ...process.env, SOURCE_DATE_EPOCH: String(inputs.epochS) } },
  );
  const built = join(top, "RPMS", rpmArch[inputs.arch], `sef-${inputs.version}-1.${rpmArch[inputs.arch]}.rpm`);
  const out = join(inputs.outDir, `sef-${inputs.version}-1.${rpmArch[inputs.arch]}.rpm`);
  copyFileSync(built, out);
  return out;
}

/** File name endings of the two tarballs: .tar.gz opens everywhere, .tar.xz is about a third smaller. */
const tarballSuffix: Readonly<Record<TarCompression, string>> = { gzip: "tar.gz", xz: "tar.xz" };

/**
 * `sef-VERSION-linux-ARCH/{bin/sef, lib/sef/…, share/sef/…, install.sh}`, which runs from wherever it is unpacked: one
 * tar stream, written with each of `compressions` (each with its profile). Returns the files in that order.
 */
export async function buildTarballs(
  inputs: Omit<LinuxInputs, "compression">,
  compressions: ReadonlyArray<readonly [TarCompression, CompressionProfile]>,
): Promise<string[]> {
  const name = `sef-${inputs.version}-linux-${inputs.arch}`;
  const parent = join(inputs.workDir, `tar-${inputs.arch}`);
  rmSync(parent, { recursive: true, force: true });
  const dir = join(parent, name);
  stageAgent(inputs, dir);
  copyFileSync(join(linuxDir(inputs.repoRoot), "install.sh"), join(dir, "install.sh"));
  normalizeTree(dir, inputs.epochS, { "install.sh": 0o755 });
  const outs = compressions.map(([compression]) => join(inputs.outDir, `${name}.${tarballSuffix[compression]}`));
  const profiles = new Map(compressions);
  await writeTarballs(
    parent,
    name,
    Object.fromEntries(compressions.map(([c], i) => [c, outs[i]!])),
    inputs.epochS,
    (c) => profiles.get(c)!,
  );
  return outs;
}

/** The agent's inputs without the repository (the fleet's tarball holds no file of infra/linux). */
export type FleetTarballInputs = Omit<LinuxInputs, "repoRoot">;

/** `sef-fleet-VERSION-linux-ARCH/lib/sef-fleet/{node, sef-fleet.mjs, chunks/, LICENSE.node}`: the fleet image's contents. */
export async function buildFleetTarball(inputs: FleetTarballInputs): Promise<string> {
  const name = `sef-fleet-${inputs.version}-linux-${inputs.arch}`;
  const parent = join(inputs.workDir, `fleet-tar-${inputs.arch}`);
  rmSync(parent, { recursive: true, force: true });
  stageBundle(inputs, join(parent, name, "lib", "sef-fleet"));
  normalizeTree(join(parent, name), inputs.epochS, {});
  const out = join(inputs.outDir, `${name}.tar.gz`);
  await writeTarballs(parent, name, { gzip: out }, inputs.epochS, () => inputs.compression);
  return out;
}
