// infra/container/Dockerfile (the agent) and infra/fleet/Dockerfile (the fleet service) built and run for real with
// podman (daemonless), with no registry: the pinned distroless base cannot be pulled here, so the test makes a stand-in
// from this machine's files (the glibc, libstdc++ and libgcc_s that `ldd` says the shipped Node binary needs, plus the
// `nonroot` user 65532), imports it under a local name and builds the real Dockerfiles on it (`--build-arg BASE_IMAGE=`)
// from the unpacked tarballs. The fleet image runs with the args bicep gives it; the agent image runs the way
// the Helm chart runs it (host network, read-only root, no capabilities, the chart's data-owner init command on a
// root-owned data dir) against the IMDS simulator on loopback: non-root, a record on stdout, /readyz, and a clean
// SIGTERM stop. What podman keeps (images, containers, runtime state, cgroups) is this test's own and removed at the end;
// only containers/image's blob-info cache, fixed at /var/lib/containers/cache for root, is the machine's.
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSimulator, type Simulator } from "../../src/testbed/simulator/server.js";
import { linuxArtifacts, packageVersion, repoRoot } from "./artifacts.js";
import { runProcess, type ProcessResult } from "../helpers/run-process.js";
import { waitFor } from "../helpers/wait.js";

const scratch = mkdtempSync(join(tmpdir(), "sef-container-"));
const suffix = randomBytes(4).toString("hex");
const baseImage = `localhost/sef-test-distroless-cc:${suffix}`;
const image = `localhost/sef:${packageVersion}-test-${suffix}`;
const nonroot = 65532;
/** The containers' cgroups go under this (in each controller's root, cgroupfs manager); removed at the end. */
const cgroupParent = `/sef-test-${suffix}`;

/** Config files of the test's own instead of the machine's (built-in defaults otherwise; no registries); temp files under `scratch`. */
const podmanEnv: NodeJS.ProcessEnv = {
  ...process.env,
  TMPDIR: join(scratch, "tmp"),
  CONTAINERS_CONF: join(scratch, "containers.conf"),
  CONTAINERS_STORAGE_CONF: join(scratch, "storage.conf"),
  CONTAINERS_REGISTRIES_CONF: join(scratch, "registries.conf"),
};
/**
 * A private store (vfs: no kernel overlay or FUSE needed), runtime dirs and network config under `scratch`; cgroups
 * through cgroupfs (no systemd); events in a file; runc, whose state also goes under `scratch` (crun 1.8 refuses a
 * cgroup v1 host whose cgroup2 mount has a controller enabled, as here).
 */
const podmanGlobal = [
  "--root",
  join(scratch, "storage"),
  "--runroot",
  join(scratch, "run"),
  "--tmpdir",
  join(scratch, "libpod"),
  "--network-config-dir",
  join(scratch, "net.d"),
  "--storage-driver",
  "vfs",
  "--cgroup-manager",
  "cgroupfs",
  "--events-backend",
  "file",
  "--runtime",
  "runc",
  "--runtime-flag",
  `root=${join(scratch, "runc")}`,
];
/**
 * For every container: podman's default limits (nofile 1048576, nproc 4194304) are above this machine's hard limits
 * and root here lacks CAP_SYS_RESOURCE to raise them; these are low enough for any machine and ample for the agent.
 */
const runDefaults = [
  "--cgroup-parent",
  cgroupParent,
  "--ulimit",
  "nofile=4096:4096",
  "--ulimit",
  "nproc=4096:4096",
  "--pull=never",
];

function podman(args: string[], timeoutMs: number): Promise<ProcessResult> {
  return runProcess("podman", [...podmanGlobal, ...args], timeoutMs, { env: podmanEnv });
}

async function podmanOk(args: string[], timeoutMs: number): Promise<string> {
  const result = await podman(args, timeoutMs);
  if (result.code !== 0)
    throw new Error(`podman ${args.join(" ")} exited with ${result.code}:\n${result.stderr}${result.stdout}`);
  return result.stdout;
}

/**
 * The stand-in for gcr.io/distroless/cc-debian12:nonroot: what the shipped node binary loads (per ldd, at the same
 * paths), /etc/passwd and /etc/group with root, nobody and nonroot (65532), /tmp 1777 and /home/nonroot. No shell.
 */
async function buildBaseRootfs(node: string, rootfs: string): Promise<string[]> {
  const ldd = await runProcess("ldd", [node], 10_000);
  expect(ldd.code, ldd.stderr).toBe(0);
  // "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" and the loader "/lib64/ld-linux-x86-64.so.2 (0x...)".
  const libraries = [...ldd.stdout.matchAll(/^\s*(?:\S+ => )?(\/\S+) \(0x[0-9a-f]+\)$/gm)].map((m) => m[1]!);
  expect(
    libraries.some((l) => l.includes("/ld-linux")),
    ldd.stdout,
  ).toBe(true);
  expect(
    libraries.some((l) => l.endsWith("/libstdc++.so.6")),
    ldd.stdout,
  ).toBe(true);
  for (const library of libraries) {
    mkdirSync(join(rootfs, dirname(library)), { recursive: true });
    copyFileSync(library, join(rootfs, library)); // follows symlinks: the image gets the files themselves
  }
  mkdirSync(join(rootfs, "etc"), { recursive: true });
  writeFileSync(
    join(rootfs, "etc/passwd"),
    `root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:${nonroot}:${nonroot}:nonroot:/home/nonroot:/sbin/nologin\n`,
  );
  writeFileSync(join(rootfs, "etc/group"), `root:x:0:\nnobody:x:65534:\nnonroot:x:${nonroot}:\n`);
  mkdirSync(join(rootfs, "tmp"));
  chmodSync(join(rootfs, "tmp"), 0o1777);
  mkdirSync(join(rootfs, "home/nonroot"), { recursive: true });
  const chown = await runProcess("chown", [`${nonroot}:${nonroot}`, join(rootfs, "home/nonroot")], 10_000);
  expect(chown.code, chown.stderr).toBe(0);
  return libraries;
}

/** The host uids/gids (real, effective, saved, fs), effective capabilities and NoNewPrivs of a process. */
function processIdentity(pid: number): { uid: string; gid: string; capEff: string; noNewPrivs: string } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const field = (name: string): string =>
    new RegExp(`^${name}:\\s*(.*)$`, "m").exec(status)?.[1]?.trim().replace(/\s+/g, " ") ?? "";
  return { uid: field("Uid"), gid: field("Gid"), capEff: field("CapEff"), noNewPrivs: field("NoNewPrivs") };
}

let baseImported: Promise<string[]> | undefined;

/** The base, imported once from a tarball of its root under a local name (no registry anywhere); its library paths. */
function importBaseImage(node: string): Promise<string[]> {
  baseImported ??= (async () => {
    const rootfs = join(scratch, "base-rootfs");
    const libraries = await buildBaseRootfs(node, rootfs);
    const baseTar = join(scratch, "base.tar");
    const tar = await runProcess("tar", ["--numeric-owner", "-C", rootfs, "-cf", baseTar, "."], 30_000);
    expect(tar.code, tar.stderr).toBe(0);
    await podmanOk(["import", "--change", `USER ${nonroot}:${nonroot}`, baseTar, baseImage], 60_000);
    return libraries;
  })();
  return baseImported;
}

/** The build context a Dockerfile's comment describes: the unpacked tarball as `./<dir>`. */
async function unpackedContext(tarball: string, dir: string): Promise<string> {
  const context = join(scratch, `context-${dir}`);
  mkdirSync(join(context, dir), { recursive: true });
  const untar = await runProcess("tar", ["-xzf", tarball, "-C", join(context, dir), "--strip-components=1"], 60_000);
  expect(untar.code, untar.stderr).toBe(0);
  return context;
}

let sim: Simulator | undefined;
let agent: ChildProcess | undefined;

beforeAll(() => {
  for (const dir of ["net.d", "runc", "tmp"]) mkdirSync(join(scratch, dir));
  writeFileSync(join(scratch, "containers.conf"), `[engine]\nimage_copy_tmp_dir = "${join(scratch, "tmp")}"\n`);
  writeFileSync(
    join(scratch, "storage.conf"),
    `[storage]\ndriver = "vfs"\ngraphroot = "${join(scratch, "storage")}"\nrunroot = "${join(scratch, "run")}"\n`,
  );
  writeFileSync(join(scratch, "registries.conf"), "");
});

// The tarballs, built (or awaited: npm test's set-up step builds them in the background) before any test's own deadline.
beforeAll(() => linuxArtifacts(["tar-x64", "fleet-tar-x64"]), 2_700_000);

afterAll(async () => {
  agent?.kill("SIGKILL");
  await sim?.close();
  // Containers and images first, then whatever else is in the private store; nothing of it may stay mounted.
  await podman(["rm", "--force", "--all", "--time", "0"], 30_000);
  await podman(["system", "reset", "--force"], 60_000);
  const mounts = readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .map((l) => l.split(" ")[4] ?? "")
    .filter((m) => m.startsWith(scratch));
  for (const mount of mounts.reverse()) await runProcess("umount", ["--lazy", mount], 10_000);
  rmSync(scratch, { recursive: true, force: true });
  // runc leaves the containers' (empty) cgroups under the parent here: remove the whole subtree, deepest first.
  const removeCgroup = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true }))
      if (entry.isDirectory()) removeCgroup(join(dir, entry.name));
    rmdirSync(dir);
  };
  const cgroupDirs = [
    join("/sys/fs/cgroup", cgroupParent),
    ...readdirSync("/sys/fs/cgroup").map((c) => join("/sys/fs/cgroup", c, cgroupParent)),
  ];
  for (const dir of cgroupDirs.filter((d) => existsSync(d))) removeCgroup(dir);
  expect(mounts, "mounts left under the test's directory").toEqual([]);
}, 120_000);

describe("the container image (infra/container/Dockerfile, built with podman on a local stand-in for the distroless base)", () => {
  it("builds from the unpacked .tar.gz; runs as 65532 with the default CMD config; a record arrives; /readyz; SIGTERM stops it with 0", async () => {
    const started = Date.now();
    const { "tar-x64": tarball } = await linuxArtifacts(["tar-x64"]);

    const context = await unpackedContext(tarball!, "sef");

    const libraries = await importBaseImage(join(context, "sef/lib/sef/node"));

    await podmanOk(
      [
        "build",
        "--pull=never",
        "--build-arg",
        `BASE_IMAGE=${baseImage}`,
        "--file",
        join(repoRoot, "infra/container/Dockerfile"),
        "--tag",
        image,
        context,
      ],
      120_000,
    );
    const config = (
      JSON.parse(await podmanOk(["image", "inspect", image], 30_000)) as {
        Config: { User: string; Entrypoint: string[]; Cmd: string[]; Env: string[] };
      }[]
    )[0]!.Config;
    expect(config.User).toBe(`${nonroot}:${nonroot}`);
    expect(config.Entrypoint).toEqual([
      "/opt/sef/node",
      "--optimize-for-size",
      "--liftoff-only",
      "--no-maglev",
      "--no-turbofan",
      "/opt/sef/sef.mjs",
    ]);
    expect(config.Cmd).toEqual(["run", "--config", "/etc/sef/config.json"]);
    expect(config.Env).toEqual(expect.arrayContaining(["NODE_ENV=production", "SEF_DATA_DIR=/var/lib/sef"]));
    const version = await podmanOk(["run", "--rm", ...runDefaults, "--network", "none", image, "--version"], 30_000);
    expect(version.trim()).toBe(packageVersion);

    // The data dir as a hostPath (DirectoryOrCreate) leaves it: root's, 0755. The chart's init container hands it to
    // 65532 with its own command (root, only CAP_CHOWN): run that command, read from the chart, on this image.
    const dataDir = join(scratch, "data");
    mkdirSync(dataDir, { mode: 0o755 });
    const daemonset = readFileSync(join(repoRoot, "infra/helm/sef/templates/daemonset.yaml"), "utf8");
    const initCommand = /- name: data-owner\n[\s\S]*?\n\s+command: (\[.*\])\n/.exec(daemonset)?.[1];
    expect(initCommand, "the chart's data-owner init container command").toBeDefined();
    const [entrypoint, ...initArgs] = JSON.parse(initCommand!) as string[];
    await podmanOk(
      [
        "run",
        "--rm",
        ...runDefaults,
        "--network",
        "none",
        "--user",
        "0",
        "--cap-drop",
        "ALL",
        "--cap-add",
        "CHOWN",
        "--security-opt",
        "no-new-privileges",
        "--volume",
        `${dataDir}:/var/lib/sef`,
        "--entrypoint",
        entrypoint!,
        image,
        ...initArgs,
      ],
      30_000,
    );
    expect(statSync(dataDir).uid).toBe(nonroot);
    const afterBuildMs = Date.now() - started;

    // The agent as the chart runs it, on the image's own config file and CMD: IMDS and the metrics port from SEF_*.
    sim = await startSimulator({ scenario: "live-migration", speed: 100 });
    const name = `sef-test-${suffix}`;
    let stdout = "";
    let stderr = "";
    const exited = new Promise<number | null>((resolve) => {
      agent = spawn(
        "podman",
        [
          ...podmanGlobal,
          "run",
          "--name",
          name,
          ...runDefaults,
          "--network",
          "host",
          "--read-only",
          "--cap-drop",
          "ALL",
          "--security-opt",
          "no-new-privileges",
          "--volume",
          `${dataDir}:/var/lib/sef`,
          "--env",
          `SEF_IMDS_URL=${sim!.url}`,
          "--env",
          "SEF_METRICS_PORT=0",
          image,
        ],
        { env: podmanEnv, stdio: ["ignore", "pipe", "pipe"], timeout: 60_000, killSignal: "SIGKILL" },
      );
      agent.stdout!.on("data", (c: Buffer) => (stdout += c.toString()));
      agent.stderr!.on("data", (c: Buffer) => (stderr += c.toString()));
      agent.on("close", (code) => resolve(code));
    });
    const output = (): string => `stdout:\n${stdout}\nstderr:\n${stderr}`;

    const record = await waitFor(
      "a Transition record on the container's stdout",
      () => {
        const line = stdout.split("\n").find((l) => l.includes('"RecordType":"Transition"'));
        return line === undefined ? undefined : (JSON.parse(line) as Record<string, unknown>);
      },
      { timeoutMs: 20_000, intervalMs: 100, detail: output },
    );
    expect(record).toMatchObject({ RecordType: "Transition", AgentVersion: packageVersion, EventStatus: "Scheduled" });

    // Not root: the agent process, seen from the host (no user namespace: ids are the same inside), and its files.
    const pid = Number((await podmanOk(["inspect", "--format", "{{.State.Pid}}", name], 15_000)).trim());
    expect(pid).toBeGreaterThan(0);
    // V8's flags on node's command line, from the entry point (the agent never changes them).
    expect(readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").slice(0, config.Entrypoint.length)).toEqual(
      config.Entrypoint,
    );
    expect(processIdentity(pid)).toEqual({
      uid: `${nonroot} ${nonroot} ${nonroot} ${nonroot}`,
      gid: `${nonroot} ${nonroot} ${nonroot} ${nonroot}`,
      capEff: "0000000000000000",
      noNewPrivs: "1",
    });
    const dataFiles = readdirSync(dataDir);
    expect(dataFiles.length, "the agent's state in the data dir").toBeGreaterThan(0);
    for (const file of dataFiles) expect(statSync(join(dataDir, file)).uid, file).toBe(nonroot);

    // /readyz on the host network's loopback, at the port the agent logged (SEF_METRICS_PORT=0: any free port).
    const metricsUrl = await waitFor(
      "the observability endpoints' address in the log",
      () => /"url":"(http:\/\/127\.0\.0\.1:\d+)"[^\n]*observability endpoints listening/.exec(stderr)?.[1],
      { timeoutMs: 10_000, intervalMs: 100, detail: output },
    );
    const ready = await waitFor(
      "/readyz 200",
      async () => {
        const res = await fetch(`${metricsUrl}/readyz`, { signal: AbortSignal.timeout(2_000) }).catch(() => undefined);
        return res?.status === 200 ? await res.text() : undefined;
      },
      { timeoutMs: 15_000, intervalMs: 100, detail: output },
    );
    expect(ready.length).toBeGreaterThan(0);

    // `podman stop` sends SIGTERM and waits 10 s before SIGKILL: the agent must be gone well before, with exit code 0.
    const stopStarted = Date.now();
    await podmanOk(["stop", "--time", "10", name], 30_000);
    const stopMs = Date.now() - stopStarted;
    expect(await exited, output()).toBe(0);
    expect(stopMs, output()).toBeLessThan(8_000);
    expect((await podmanOk(["inspect", "--format", "{{.State.ExitCode}}", name], 15_000)).trim()).toBe("0");
    expect(stderr).not.toMatch(/"level":"(error|fatal)"/);

    const scheduledPolls = Object.entries(sim.status().requests).filter(([path]) => path.includes("scheduledevents"));
    expect(scheduledPolls.length, "the agent polled the simulator").toBeGreaterThan(0);
    console.info(
      `container image: base from ${libraries.length} libraries; built and data dir handed over in ${afterBuildMs} ms; stopped in ${stopMs} ms; total ${Date.now() - started} ms`,
    );
  }, 240_000);

  it("the fleet image (infra/fleet/Dockerfile) runs the fleet service as bicep/modules/fleet.bicep tells Container Apps to", async () => {
    // Its own image from its own tarball: no agent code in it. Container Apps' `command` replaces the ENTRYPOINT and
    // `args` the CMD; the image has no shell, so the module must leave `command` out, and its args must reach
    // `sef-fleet`, which reads the config from the variable they name: an incomplete config is refused with exit 2 and
    // the missing fields named.
    const { "fleet-tar-x64": tarball } = await linuxArtifacts(["fleet-tar-x64"]);
    const context = await unpackedContext(tarball!, "sef-fleet");
    const shipped = readdirSync(join(context, "sef-fleet/lib/sef-fleet"));
    expect(shipped).toEqual(expect.arrayContaining(["node", "sef-fleet.mjs"]));
    expect(shipped.filter((f) => f.startsWith("sef.mjs"))).toEqual([]);
    await importBaseImage(join(context, "sef-fleet/lib/sef-fleet/node"));
    const fleetImage = `localhost/sef-fleet:test-${suffix}`;
    await podmanOk(
      [
        "build",
        "--pull=never",
        "--build-arg",
        `BASE_IMAGE=${baseImage}`,
        "--file",
        join(repoRoot, "infra/fleet/Dockerfile"),
        "--tag",
        fleetImage,
        context,
      ],
      120_000,
    );
    const config = (
      JSON.parse(await podmanOk(["image", "inspect", fleetImage], 30_000)) as {
        Config: { User: string; Entrypoint: string[] };
      }[]
    )[0]!.Config;
    expect(config.User).toBe(`${nonroot}:${nonroot}`);
    expect(config.Entrypoint).toEqual(["/opt/sef-fleet/node", "/opt/sef-fleet/sef-fleet.mjs"]);

    const bicep = readFileSync(join(repoRoot, "bicep/modules/fleet.bicep"), "utf8");
    const container = /name: 'sef-fleet'\n([\s\S]*?)\n\s+env:/.exec(bicep)?.[1];
    expect(container, "the sef-fleet container in fleet.bicep").toBeDefined();
    expect(container).not.toMatch(/^\s+command:/m);
    const args = [.../^\s+args: \[\n([\s\S]*?)\n\s+\]/m.exec(container!)![1]!.matchAll(/'([^']*)'/g)].map((m) => m[1]!);
    expect(args[0]).toBe("--config-env");
    const configVariable = args[1]!;
    expect(configVariable).toMatch(/^[A-Z_]+$/);

    const result = await podman(
      [
        "run",
        "--rm",
        ...runDefaults,
        "--network",
        "none",
        "--read-only",
        "--cap-drop",
        "ALL",
        "--env",
        `${configVariable}={"eventHubs":{}}`,
        fleetImage,
        ...args,
      ],
      30_000,
    );
    expect(result.code, `${result.stdout}\n${result.stderr}`).toBe(2);
    expect(result.stderr).toMatch(/^sef fleet: eventHubs\.connection: /m);
    expect(result.stderr).toMatch(/^sef fleet: targets: /m);
  }, 240_000);
});
