// The VM Application's scripts (infra/vmapp/): the commands in commands.json parse in the interpreter the agent uses
// (bash), bundle.sh builds the two bundles with their SHA256SUMS, upload.sh's az commands (--dry-run) create versions
// with exactly those commands and file names. vmapp.sh runs for real in test/package/vmapp.test.ts; the Windows
// commands and vmapp.ps1 under pwsh in windows-scripts.test.ts.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { repoRoot } from "./support/bicep.js";

const vmapp = join(repoRoot, "infra/vmapp");
type Commands = Record<
  "linux" | "windows",
  Record<"install" | "update" | "remove" | "packageFileName" | "configFileName", string>
>;
const commands = JSON.parse(readFileSync(join(vmapp, "commands.json"), "utf8")) as Commands;
const scratch = mkdtempSync(join(tmpdir(), "sef-vmapp-scripts-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe("infra/vmapp/commands.json", () => {
  it("the Linux commands are bash that parses, find the package under either name and run vmapp.sh with their action", () => {
    for (const action of ["install", "update", "remove"] as const) {
      const command = commands.linux[action];
      expect(spawnSync("bash", ["-n", "-c", command]).status, action).toBe(0);
      expect(command).toContain(
        `p=${commands.linux.packageFileName}; [ -f "$p" ] || p="$(basename "$(dirname "$PWD")")"`,
      );
      expect(command.endsWith(`bash bundle/vmapp.sh ${action}`), action).toBe(true);
    }
  });

  it("the Linux commands unpack and run the bundle only when it has the SHA-256 published with the version", () => {
    const dir = mkdtempSync(join(scratch, "download-"));
    const content = join(dir, "content");
    mkdirSync(content);
    writeFileSync(join(content, "vmapp.sh"), 'echo "vmapp.sh ran: $*"\n');
    expect(spawnSync("tar", ["-cf", join(dir, commands.linux.packageFileName), "-C", content, "."]).status).toBe(0);
    const published = createHash("sha256")
      .update(readFileSync(join(dir, commands.linux.packageFileName)))
      .digest("hex");
    const run = (hash: string) =>
      spawnSync("bash", ["-c", commands.linux.install.replaceAll("@BUNDLE_SHA256@", hash)], {
        cwd: dir,
        encoding: "utf8",
      });
    const swapped = run("0".repeat(64));
    expect(swapped.status).toBe(1);
    expect(swapped.stderr).toContain(
      `sef vmapp: ${commands.linux.packageFileName} is not the published bundle (its SHA-256 differs): refusing it`,
    );
    expect(swapped.stdout).toBe("");
    const accepted = run(published);
    expect(accepted.status, accepted.stderr).toBe(0);
    expect(accepted.stdout).toBe("vmapp.sh ran: install\n");
  });

  it("vmapp.sh refuses a malformed --sha256 and unknown arguments before anything else", () => {
    const run = (...args: string[]) =>
      spawnSync("bash", [join(vmapp, "vmapp.sh"), ...args], { encoding: "utf8", cwd: scratch });
    expect(run("install", "--sha256", "abc")).toMatchObject({
      status: 1,
      stderr: expect.stringContaining("--sha256 needs 64 hex digits"),
    });
    expect(run("install", "--frob").stderr).toContain(
      "usage: vmapp.sh install|update|remove [--sha256 HEX] [CONFIG_FILE]",
    );
    expect(run("deploy").status).toBe(1);
  });

  it("names the files as settings.packageFileName and configFileName", () => {
    expect(commands.linux).toMatchObject({ packageFileName: "sef-vmapp.tar", configFileName: "sef-config.json" });
    expect(commands.windows).toMatchObject({ packageFileName: "sef-vmapp.zip", configFileName: "sef-config.json" });
    for (const name of ["sef-config.json", "_config", "-config"]) {
      expect(readFileSync(join(vmapp, "vmapp.sh"), "utf8")).toContain(name);
      expect(readFileSync(join(vmapp, "vmapp.ps1"), "utf8")).toContain(name);
    }
  });
});

describe("infra/vmapp/bundle.sh and upload.sh", () => {
  const artifacts = join(scratch, "artifacts");
  mkdirSync(artifacts, { recursive: true });
  for (const name of [
    "sef_9.8.7_amd64.deb",
    "sef-9.8.7-1.x86_64.rpm",
    "sef-9.8.7-1.aarch64.rpm",
    "sef-9.8.7-win-x64.zip",
    "sef_9.8.6_amd64.deb",
  ])
    writeFileSync(join(artifacts, name), name);

  it("bundle.sh packs vmapp.sh, install.sh and the version's Linux packages in a tar, vmapp.ps1 and the sef zip in a zip", () => {
    const out = join(scratch, "bundles");
    const result = spawnSync("bash", [join(vmapp, "bundle.sh"), artifacts, "9.8.7", out], { encoding: "utf8" });
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout.trim().split("\n")).toEqual([
      join(out, "sef-9.8.7-vmapp-linux.tar"),
      join(out, "sef-9.8.7-vmapp-windows.zip"),
    ]);
    const tar = spawnSync("tar", ["-tvf", join(out, "sef-9.8.7-vmapp-linux.tar")], { encoding: "utf8" }).stdout;
    expect(
      tar
        .split("\n")
        .filter(Boolean)
        .map((l) => l.split(/\s+/).at(-1)),
    ).toEqual([
      "SHA256SUMS",
      "install.sh",
      "sef-9.8.7-1.aarch64.rpm",
      "sef-9.8.7-1.x86_64.rpm",
      "sef_9.8.7_amd64.deb",
      "vmapp.sh",
    ]);
    const sums = spawnSync("tar", ["-xOf", join(out, "sef-9.8.7-vmapp-linux.tar"), "SHA256SUMS"], { encoding: "utf8" });
    const hash = (name: string): string => createHash("sha256").update(name).digest("hex"); // each file holds its name
    expect(sums.stdout).toBe(
      ["sef_9.8.7_amd64.deb", "sef-9.8.7-1.x86_64.rpm", "sef-9.8.7-1.aarch64.rpm"]
        .map((n) => `${hash(n)}  ${n}\n`)
        .join(""),
    );
    expect(tar).toMatch(/^-rwxr-xr-x 0\/0 .* vmapp\.sh$/m);
    const zip = spawnSync("python3", ["-m", "zipfile", "-l", join(out, "sef-9.8.7-vmapp-windows.zip")], {
      encoding: "utf8",
    }).stdout;
    expect(zip).toMatch(/^vmapp\.ps1 /m);
    expect(zip).toMatch(/^sef-9\.8\.7-win-x64\.zip /m);
    expect(zip).toMatch(/^SHA256SUMS /m);
    // With the release's SHA256SUMS beside the artifacts, a package that does not match it is refused.
    writeFileSync(join(artifacts, "SHA256SUMS"), `${"0".repeat(64)}  sef-9.8.7-win-x64.zip\n`);
    const mismatch = spawnSync("bash", [join(vmapp, "bundle.sh"), artifacts, "9.8.7", join(scratch, "no")], {
      encoding: "utf8",
    });
    rmSync(join(artifacts, "SHA256SUMS"));
    expect(mismatch.status).not.toBe(0);
    expect(mismatch.stderr).toMatch(/sef_9\.8\.7_amd64\.deb does not match .*SHA256SUMS \(not listed\)/);
    const missing = spawnSync("bash", [join(vmapp, "bundle.sh"), artifacts, "1.2.3", out], { encoding: "utf8" });
    expect(missing.status).not.toBe(0);
    expect(missing.stderr).toContain("holds no sef 1.2.3");
  });

  it("upload.sh --dry-run uploads the bundles and config and creates each version with commands.json's commands and names", () => {
    const config = join(scratch, "config.json");
    writeFileSync(config, '{"sinks":["stdout"]}\n');
    const args = [
      "--resource-group",
      "sef-rg",
      "--storage-account",
      "sefpkgs",
      "--gallery",
      "sef_gallery",
      "--version",
      "9.8.7",
      "--artifacts",
      artifacts,
      "--config",
      config,
      "--location",
      "westeurope",
      "--target-regions",
      "westeurope northeurope",
      "--dry-run",
    ];
    const result = spawnSync("bash", [join(vmapp, "upload.sh"), ...args], { encoding: "utf8" });
    expect(result.status, result.stderr).toBe(0);
    const lines = result.stderr.split("\n"); // --dry-run prints the az commands on stderr
    expect(result.stdout).toContain(
      "upload.sh: sef-linux 9.8.7: /subscriptions/.../resourceGroups/sef-rg/providers/Microsoft.Compute/galleries/sef_gallery/applications/sef-linux/versions/9.8.7",
    );
    const quoted = (s: string): string =>
      spawnSync("bash", ["-c", 'printf %q "$1"', "_", s], { encoding: "utf8" }).stdout;
    for (const os of ["linux", "windows"] as const) {
      const create = lines.find(
        (l) => l.startsWith("az sig gallery-application version create") && l.includes(`--application-name sef-${os}`),
      );
      expect(create, os).toBeDefined();
      // Each command as in commands.json, with the uploaded bundle's SHA-256 for @BUNDLE_SHA256@ (the same in all three).
      const hashes = (["install", "update", "remove"] as const).map((action) => {
        const [before, after] = quoted(commands[os][action]).split("@BUNDLE_SHA256@") as [string, string];
        const at = create!.indexOf(`--${action}-command ${before}`);
        expect(at, action).toBeGreaterThan(0);
        const rest = create!.slice(at + `--${action}-command ${before}`.length);
        expect(rest.slice(64).startsWith(after), action).toBe(true);
        return rest.slice(0, 64);
      });
      expect(hashes[0]).toMatch(/^[0-9a-f]{64}$/);
      expect(new Set(hashes).size).toBe(1);
      expect(create).toContain(`--package-file-name ${commands[os].packageFileName}`);
      expect(create).toContain(`--config-file-name ${commands[os].configFileName}`);
      expect(create).toContain("--version-name 9.8.7");
      expect(create).toContain(
        quoted(
          '[{"name": "westeurope", "regionalReplicaCount": 1}, {"name": "northeurope", "regionalReplicaCount": 1}]',
        ),
      );
    }
    const uploads = lines.filter((l) => l.startsWith("az storage blob upload")).map((l) => /--name (\S+)/.exec(l)?.[1]);
    expect(uploads).toEqual([
      "9.8.7/config.json",
      "9.8.7/sef-9.8.7-vmapp-linux.tar",
      "9.8.7/sef-9.8.7-vmapp-windows.zip",
    ]);
    expect(
      lines
        .filter((l) => l.includes("generate-sas"))
        .every((l) => l.includes("--as-user") && l.includes("--permissions r")),
    ).toBe(true);
    expect(result.stderr).not.toMatch(/account-key|connection-string/);
  }, 120_000);

  it("upload.sh refuses a bad version name and missing inputs before running anything", () => {
    const run = (...args: string[]) => spawnSync("bash", [join(vmapp, "upload.sh"), ...args], { encoding: "utf8" });
    expect(run("--help").stdout).toMatch(/^Usage: upload\.sh --resource-group RG/);
    const base = [
      "--resource-group",
      "rg",
      "--storage-account",
      "sa",
      "--gallery",
      "g",
      "--artifacts",
      artifacts,
      "--dry-run",
    ];
    expect(run(...base, "--version", "v1").stderr).toContain("--version must be MAJOR.MINOR.PATCH");
    expect(run(...base).stderr).toContain("--version is required");
    expect(run(...base, "--version", "1.0.0", "--config", join(scratch, "nope.json")).stderr).toContain(
      "no such config file",
    );
  }, 60_000);
});
