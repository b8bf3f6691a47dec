// The Linux VM Application (infra/vmapp: bundle.sh's tar of vmapp.sh, install.sh and the .deb/.rpm) on throwaway
// roots, its commands run exactly as Azure's VM Application agent runs them (throwaway-root-vmapp.sh): an older build
// installed, updated to this one, rolled back, removed and installed again, on a Debian root (the .deb) and an RPM
// root (the .rpm, dnf there with its repository unreachable); the config under Azure's default name
// (<application>_config) is found; /var/lib/sef and the config survive each step, a broken config fails the install,
// a package that does not match the bundle's SHA256SUMS is refused.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { linuxArtifacts, olderPackageVersion, packageVersion, repoRoot } from "./artifacts.js";
import { runProcess } from "../helpers/run-process.js";

const scratch = mkdtempSync(join(tmpdir(), "sef-vmapp-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const commands = (
  JSON.parse(readFileSync(join(repoRoot, "infra/vmapp/commands.json"), "utf8")) as { linux: Record<string, string> }
).linux;
const agentEnv = {
  ...process.env,
  VMAPP_INSTALL: commands.install!,
  VMAPP_UPDATE: commands.update!,
  VMAPP_REMOVE: commands.remove!,
  VMAPP_PACKAGE_FILE_NAME: commands.packageFileName!,
  VMAPP_CONFIG_FILE_NAME: commands.configFileName!,
};

/** bundle.sh's Linux bundle of `version` from the given packages. */
function bundle(version: string, packages: readonly string[]): string {
  const dir = join(scratch, `artifacts-${version}`);
  mkdirSync(dir, { recursive: true });
  for (const p of packages) symlinkSync(p, join(dir, p.split("/").at(-1)!));
  const result = spawnSync("bash", [join(repoRoot, "infra/vmapp/bundle.sh"), dir, version, join(scratch, "bundles")], {
    encoding: "utf8",
  });
  if (result.status !== 0) throw new Error(`bundle.sh: ${result.stderr}`);
  return result.stdout.trim();
}

/** A package that puts into the rpm database what a minimal RPM system has and sef's .rpm requires. */
function baseSystemRpm(): string {
  const top = join(scratch, "rpmbuild");
  mkdirSync(join(top, "SPECS"), { recursive: true });
  const spec = join(top, "SPECS", "base.spec");
  writeFileSync(
    spec,
    [
      "Name: base-system",
      "Version: 1",
      "Release: 1",
      "Summary: what a minimal RPM-based system provides (test root)",
      "License: MIT",
      "BuildArch: noarch",
      "Provides: /bin/sh",
      "Provides: glibc = 2.36",
      "Provides: libstdc++",
      "Provides: shadow-utils",
      "%description",
      "The base packages of an RPM-based root, by what they provide.",
      "%files",
      "",
    ].join("\n"),
  );
  const result = spawnSync("rpmbuild", ["-bb", "--define", `_topdir ${top}`, spec], { encoding: "utf8" });
  if (result.status !== 0) throw new Error(`rpmbuild: ${result.stderr}`);
  return join(top, "RPMS", "noarch", "base-system-1-1.noarch.rpm");
}

let bundles: { older: string; current: string };
beforeAll(async () => {
  const current = await linuxArtifacts(["deb-x64", "rpm-x64"]);
  const older = await linuxArtifacts(["deb-x64", "rpm-x64"], olderPackageVersion);
  bundles = {
    older: bundle(olderPackageVersion, Object.values(older)),
    current: bundle(packageVersion, Object.values(current)),
  };
}, 900_000);

describe.concurrent("the Linux VM Application, run as the VM Application agent runs it", () => {
  for (const family of ["deb", "rpm"] as const) {
    it(`on ${family === "deb" ? "a Debian" : "an RPM-based"} root: install, update, rollback, remove and reinstall keep /var/lib/sef and the config; a broken config fails`, async () => {
      const args = [
        join(repoRoot, "test/package/throwaway-root-vmapp.sh"),
        join(scratch, family),
        family,
        bundles.older,
        bundles.current,
        ...(family === "rpm" ? [baseSystemRpm()] : []),
      ];
      const result = await runProcess("unshare", ["--mount", "--propagation", "private", ...args], 600_000, {
        env: agentEnv,
      });
      const log = `${result.stdout}\n${result.stderr}`;
      expect(result.code, log).toBe(0);
      expect(result.stdout).toContain(
        `ok: install of ${olderPackageVersion} (${family}, package and config under the application's name) with its config, 0640 root:sef`,
      );
      expect(result.stdout).toContain(`ok: update to ${packageVersion} keeps /var/lib/sef and the config`);
      expect(result.stdout).toContain(
        `ok: rollback from ${packageVersion} to ${olderPackageVersion} keeps /var/lib/sef and the config`,
      );
      expect(result.stdout).toContain("ok: remove keeps /var/lib/sef and the config");
      expect(result.stdout).toContain(
        `ok: remove then install again keeps /var/lib/sef and the config: ${packageVersion}`,
      );
      expect(result.stdout).toMatch(/^ok: a broken config fails the install: .*FAILED: /m);
      expect(result.stdout).toMatch(
        /^ok: a package that does not match SHA256SUMS is refused: sef vmapp: FAILED: sef.* has SHA-256 [0-9a-f]{64}, not 0{64}: refusing to install it$/m,
      );
      expect(result.stdout).toMatch(
        /^ok: a bundle swapped after publishing is refused: sef vmapp: sef-vmapp\.tar is not the published bundle \(its SHA-256 differs\): refusing it$/m,
      );
      expect(result.stdout).toMatch(
        /^ok: remove twice: sef vmapp: sef is not installed \((deb|rpm)\): nothing to remove$/m,
      );
    }, 660_000);
  }
});
