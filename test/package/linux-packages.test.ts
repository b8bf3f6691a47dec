// The .deb (and the .rpm) on a throwaway root (an overlay over this machine's Debian, see throwaway-root.sh): installs
// with its user and permissions, an upgrade from an older build (a lower version) keeps config and data, the agent runs
// from it as user sef against the IMDS simulator and writes a record, remove keeps config and data, purge deletes
// them; install.sh installs the .tar.xz and refuses a broken config. The arm64 artifacts declare their architecture
// and carry an AArch64 runtime (their .deb and .rpm are built uncompressed for the tests: their size is not measured;
// the .deb's size budget stands for the x64 .rpm's and .tar.xz's, test/package/artifacts.ts).
// Also the .tar.gz runs from wherever it is unpacked and is rebuilt byte for byte, and the .tar.xz holds the same tar
// stream.
import { spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSimulator } from "../../src/testbed/simulator/server.js";
import { buildArtifacts } from "../../infra/package/main.js";
import { elfMachine, linuxArtifacts, olderPackageVersion, packageVersion, repoRoot } from "./artifacts.js";
import { runProcess } from "../helpers/run-process.js";

const scratch = mkdtempSync(join(tmpdir(), "sef-deb-install-"));
let artifacts: Record<string, string>;
/** The same packages at a lower version ({@link olderPackageVersion}): what the upgrade starts from. */
let older: Record<string, string>;
beforeAll(async () => {
  artifacts = await linuxArtifacts(["deb-x64", "rpm-x64", "tar-x64", "txz-x64"]);
  older = await linuxArtifacts(["deb-x64", "rpm-x64"], olderPackageVersion);
}, 2_700_000); // built, or awaited while npm test's set-up step builds them in the background
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe.concurrent("the .deb", () => {
  it("is at most 35 MB and declares its conffile and maintainer scripts", () => {
    expect(statSync(artifacts["deb-x64"]!).size).toBeLessThanOrEqual(35 * 1024 * 1024);
    const info = spawnSync("dpkg-deb", ["-I", artifacts["deb-x64"]!], { encoding: "utf8" });
    expect(info.stdout).toContain(`Version: ${packageVersion}`);
    expect(info.stdout).toContain("Architecture: amd64");
    expect(info.stdout).toMatch(/postinst[\s\S]*prerm|prerm[\s\S]*postinst/);
    const conffiles = spawnSync("dpkg-deb", ["--ctrl-tarfile", artifacts["deb-x64"]!], { encoding: "buffer" });
    const listing = spawnSync("tar", ["-xO", "./conffiles"], { input: conffiles.stdout, encoding: "utf8" });
    expect(listing.stdout).toBe("/etc/sef/config.json\n");
  });

  it("installs an older build on a throwaway root, upgrades it to this one; the agent runs from it as user sef and a record arrives; remove, purge", async () => {
    const sim = await startSimulator({ scenario: "live-migration", speed: 100 });
    try {
      const result = await runProcess(
        "unshare",
        [
          "--mount",
          "--propagation",
          "private",
          join(repoRoot, "test/package/throwaway-root.sh"),
          scratch,
          artifacts["deb-x64"]!,
          sim.url,
          artifacts["txz-x64"]!,
          join(repoRoot, "infra/linux/install.sh"),
          older["deb-x64"]!,
        ],
        150_000,
      );
      const log = `${result.stdout}\n${result.stderr}`;
      expect(result.code, log).toBe(0);
      expect(result.stdout).toMatch(/^ok: installed in \d+ ms$/m);
      expect(result.stdout).toContain("ok: user sef, /etc/sef 0750 and its files 0640 root:sef");
      expect(result.stdout).toContain("ok: sef.service enabled without systemd running");
      expect(result.stdout).toContain(`ok: version ${olderPackageVersion}`); // the older build, installed first
      expect(result.stdout).toContain(
        `ok: upgrade from ${olderPackageVersion} to ${packageVersion} keeps config and data`,
      );
      const record = JSON.parse(/^ok: a transition record arrived: (.*)$/m.exec(result.stdout)?.[1] ?? "{}") as Record<
        string,
        unknown
      >;
      expect(record).toMatchObject({
        RecordType: "Transition",
        AgentVersion: packageVersion,
        EventStatus: "Scheduled",
      });
      for (const line of ["ok: remove keeps config and data", "ok: purge deletes config and data"]) {
        expect(result.stdout).toContain(line);
      }
      expect(result.stdout).toContain(`ok: install.sh installed the tarball: ${packageVersion}`);
      expect(result.stdout).toMatch(/^ok: install\.sh fails loudly on a broken config: install\.sh: FAILED: /m);
    } finally {
      await sim.close();
    }
  }, 180_000);
});

describe.concurrent("the .rpm", () => {
  it("installs an older build on a throwaway root with its scriptlets (user, permissions); upgrading to this one keeps config and data; erase keeps data", async () => {
    const result = await runProcess(
      "unshare",
      [
        "--mount",
        "--propagation",
        "private",
        join(repoRoot, "test/package/throwaway-root-rpm.sh"),
        join(scratch, "rpm"),
        artifacts["rpm-x64"]!,
        older["rpm-x64"]!,
      ],
      120_000,
    );
    expect(result.code, `${result.stdout}\n${result.stderr}`).toBe(0);
    expect(result.stdout).toContain(
      `ok: rpm -i: user sef, /etc/sef 0750, config and sef.env 0640 root:sef, version ${olderPackageVersion}`,
    );
    expect(result.stdout).toContain("ok: sef.service enabled without systemd running");
    expect(result.stdout).toContain(
      `ok: rpm -U from ${olderPackageVersion} to ${packageVersion} keeps config and data`,
    );
    expect(result.stdout).toContain("ok: rpm -e keeps data and the edited config (.rpmsave)");
    const info = spawnSync(
      "rpm",
      ["-qp", "--queryformat", "%{ARCH} %{VERSION} %{PAYLOADCOMPRESSOR}", artifacts["rpm-x64"]!],
      { encoding: "utf8" },
    );
    // Its size: the .deb's budget holds for a release's (the same files, xz at the same level: artifacts.ts); this
    // build is xz -1 (`quick`), so only a bound against a payload left uncompressed.
    expect(info.stdout).toBe(`x86_64 ${packageVersion} xz`);
    expect(statSync(artifacts["rpm-x64"]!).size).toBeLessThanOrEqual(40 * 1024 * 1024);
  }, 150_000);
});

describe.concurrent("reproducible builds", () => {
  const sha256 = (file: string): string => createHash("sha256").update(readFileSync(file)).digest("hex");

  it("building the .tar.gz again from the same inputs gives the same bytes", async () => {
    // The same SOURCE_DATE_EPOCH as the first build (read back from its entries), so a later commit does not count.
    const listing = spawnSync("tar", ["-tvzf", artifacts["tar-x64"]!, "--full-time"], {
      encoding: "utf8",
      env: { ...process.env, TZ: "UTC" },
      maxBuffer: 1 << 24,
    });
    const stamp = /(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d)/.exec(listing.stdout)!;
    const epochS = Date.parse(`${stamp[1]}T${stamp[2]}Z`) / 1000;
    const [again] = await buildArtifacts({
      repoRoot,
      targets: ["tar-x64"],
      outDir: join(scratch, "again"),
      epochS,
      integrity: false, // only the tarball is compared
    });
    expect(sha256(again!), "the same sources as the first build").toBe(sha256(artifacts["tar-x64"]!));
  }, 300_000);
});

describe("the .tar.gz", () => {
  it("unpacks to sef-VERSION-linux-x64/ and runs from there", () => {
    const dir = join(scratch, "tar");
    spawnSync("mkdir", ["-p", dir]);
    expect(spawnSync("tar", ["-xzf", artifacts["tar-x64"]!, "-C", dir]).status).toBe(0);
    const top = join(dir, `sef-${packageVersion}-linux-x64`);
    const version = spawnSync(join(top, "bin", "sef"), ["--version"], { encoding: "utf8" });
    expect(version.stdout.trim()).toBe(packageVersion);
    expect(readFileSync(join(top, "share", "sef", "sef.service"), "utf8")).toBe(
      readFileSync(join(repoRoot, "infra/linux/sef.service"), "utf8"),
    );
    expect(statSync(join(top, "install.sh")).mode & 0o111).not.toBe(0);
    // infra/container/Dockerfile copies from the unpacked tarball (as ./sef): every COPY source is there.
    const sources = [
      ...readFileSync(join(repoRoot, "infra/container/Dockerfile"), "utf8").matchAll(/^COPY (?:--\S+ )*sef\/(\S+) /gm),
    ].map((m) => m[1]!);
    expect(sources.length).toBeGreaterThan(0);
    for (const source of sources) expect(existsSync(join(top, source)), source).toBe(true);
  });

  it("bin/sef starts `sef run` on its Node with the V8 flags on the command line", async () => {
    const top = join(scratch, "tar", `sef-${packageVersion}-linux-x64`);
    const agent = spawn(
      join(top, "bin", "sef"),
      [
        "run",
        "--imds-url",
        "http://127.0.0.1:9",
        "--data-dir",
        join(scratch, "held-data"),
        "--sink",
        `jsonl:${join(scratch, "held.jsonl")}`,
        "--metrics-port",
        "0",
      ],
      { stdio: "ignore" },
    );
    try {
      // The wrapper execs node (same pid): wait until the process is the agent, then read its command line.
      let cmdline: string[] = [];
      const deadline = Date.now() + 10_000;
      while (!cmdline.some((a) => a.endsWith("sef.mjs")) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 50));
        cmdline = readFileSync(`/proc/${agent.pid}/cmdline`, "utf8").split("\0");
      }
      expect(cmdline.slice(0, 5)).toEqual([
        `${join(top, "bin")}/../lib/sef/node`,
        "--optimize-for-size",
        "--liftoff-only",
        "--no-maglev",
        "--no-turbofan",
      ]);
      expect(cmdline.slice(6, 7)).toEqual(["run"]);
    } finally {
      agent.kill("SIGTERM");
      await new Promise((r) => agent.once("exit", r));
    }
  });
});

describe("the .tar.xz", () => {
  it("holds the very tar stream of the .tar.gz, compressed by xz", () => {
    // Its size: the .deb's budget holds for a release's (the same files, xz at the same level: artifacts.ts); this
    // build is xz -1 (`quick`), so only a bound against a stream left uncompressed.
    expect(statSync(artifacts["txz-x64"]!).size).toBeLessThanOrEqual(40 * 1024 * 1024);
    const unpack = (command: string, file: string): Buffer =>
      spawnSync(command, ["-dc", file], { maxBuffer: 1 << 30 }).stdout;
    const fromXz = unpack("xz", artifacts["txz-x64"]!);
    expect(fromXz.length).toBeGreaterThan(100 * 1024 * 1024);
    expect(fromXz.equals(unpack("gzip", artifacts["tar-x64"]!))).toBe(true);
  });
});

/** The first bytes of the bundled Node.js runtime (usr/lib/sef/node, or lib/sef/node in a tarball) of an artifact. */
function runtimeHeader(artifact: string): Buffer {
  const unpack = artifact.endsWith(".deb")
    ? `dpkg-deb --fsys-tarfile "$1" | tar -xO ./usr/lib/sef/node`
    : artifact.endsWith(".rpm")
      ? `rpm2archive - < "$1" | tar -xzO ./usr/lib/sef/node`
      : `tar -xzOf "$1" --wildcards '*/lib/sef/node'`;
  const result = spawnSync("sh", ["-c", `${unpack} | head -c 64`, "sh", artifact], {
    encoding: "buffer",
    maxBuffer: 1 << 20,
  });
  return result.stdout;
}

const x86_64 = 62;
const aarch64 = 183;

describe("the arm64 artifacts", () => {
  let arm: Record<string, string>;
  beforeAll(async () => {
    arm = await linuxArtifacts(["deb-arm64", "rpm-arm64", "tar-arm64"]);
  }, 600_000);

  it("declare arm64 (deb) and aarch64 (rpm), and carry an AArch64 Node.js runtime; the x64 ones an x86-64 one", () => {
    expect(
      spawnSync("dpkg-deb", ["-f", arm["deb-arm64"]!, "Architecture", "Version"], { encoding: "utf8" }).stdout,
    ).toBe(`Architecture: arm64\nVersion: ${packageVersion}\n`);
    expect(
      spawnSync("rpm", ["-qp", "--queryformat", "%{ARCH} %{VERSION}", arm["rpm-arm64"]!], { encoding: "utf8" }).stdout,
    ).toBe(`aarch64 ${packageVersion}`);
    for (const target of ["deb-arm64", "rpm-arm64", "tar-arm64"])
      expect(elfMachine(runtimeHeader(arm[target]!)), target).toBe(aarch64);
    for (const target of ["deb-x64", "rpm-x64", "tar-x64"])
      expect(elfMachine(runtimeHeader(artifacts[target]!)), target).toBe(x86_64);
  }, 60_000);
});
