// The packaged agent's targets: artifact size, install of the .deb on a throwaway root with no network, cold start
// (bin/sef spawned → first IMDS scheduled-events request) and idle RSS beside a bare Node process on the same runtime.
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startSimulator } from "../../src/testbed/simulator/server.js";
import { linuxArtifacts, repoRoot } from "../package/artifacts.js";

export interface ArtifactResult {
  debMb: number;
  tarGzMb: number;
  tarXzMb: number;
  installNoNetworkMs: number;
  coldStartToFirstPollMs: number[];
  idleRssMb: { agent: number; bareNode: number; ratio: number; seconds: number };
}

const mb = (bytes: number): number => Math.round((bytes / 2 ** 20) * 10) / 10;

function rssKb(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return match ? Number(match[1]) : NaN;
}

export async function benchArtifact(idleSeconds = 30, coldStarts = 5): Promise<ArtifactResult> {
  const artifacts = await linuxArtifacts(["deb-x64", "tar-x64", "txz-x64"]);
  const scratch = mkdtempSync(join(tmpdir(), "sef-bench-artifact-"));
  try {
    // Install on a throwaway root inside a network namespace of its own (loopback only, down): no network at all.
    const install = spawnSync(
      "unshare",
      [
        "--mount",
        "--net",
        "--propagation",
        "private",
        join(repoRoot, "test/package/throwaway-root.sh"),
        join(scratch, "install"),
        artifacts["deb-x64"]!,
        "--install-only",
      ],
      { encoding: "utf8", timeout: 120_000 },
    );
    const installed = /^ok: installed in (\d+) ms$/m.exec(install.stdout);
    if (install.status !== 0 || !installed) throw new Error(`install failed: ${install.stdout}\n${install.stderr}`);

    const unpacked = join(scratch, "tar");
    mkdirSync(unpacked);
    spawnSync("tar", ["-xzf", artifacts["tar-x64"]!, "-C", unpacked, "--strip-components=1"]);
    const node = join(unpacked, "lib", "sef", "node");
    // The agent as systemd and users start it: bin/sef (it execs the shipped Node with the flags `sef run` gets).
    const sef = join(unpacked, "bin", "sef");

    const coldStartToFirstPollMs: number[] = [];
    for (let i = 0; i < coldStarts; i++) {
      const sim = await startSimulator({ scenario: "idle" });
      const polled = (): boolean => Object.keys(sim.status().requests).some((path) => path.includes("scheduledevents"));
      const started = performance.now();
      const agent = spawn(
        sef,
        [
          "run",
          "--imds-url",
          sim.url,
          "--data-dir",
          join(scratch, `cold-${i}`),
          "--sink",
          `jsonl:${join(scratch, `cold-${i}.jsonl`)}`,
          "--log-level",
          "warn",
        ],
        { stdio: "ignore" },
      );
      while (!polled() && performance.now() - started < 10_000) await new Promise((r) => setImmediate(r));
      coldStartToFirstPollMs.push(Math.round(performance.now() - started));
      agent.kill("SIGTERM");
      await new Promise((r) => agent.once("exit", r));
      await sim.close();
    }

    const sim = await startSimulator({ scenario: "idle" });
    const agent = spawn(
      sef,
      [
        "run",
        "--imds-url",
        sim.url,
        "--poll-interval-ms",
        "1000",
        "--data-dir",
        join(scratch, "idle"),
        "--sink",
        `jsonl:${join(scratch, "idle.jsonl")}`,
        "--log-level",
        "warn",
      ],
      { stdio: "ignore" },
    );
    const bare = spawn(node, ["-e", "setInterval(()=>{},1000)"], { stdio: "ignore" });
    await new Promise((r) => setTimeout(r, idleSeconds * 1000));
    const agentKb = rssKb(agent.pid!);
    const bareKb = rssKb(bare.pid!);
    agent.kill("SIGTERM");
    bare.kill("SIGTERM");
    await Promise.all([new Promise((r) => agent.once("exit", r)), new Promise((r) => bare.once("exit", r))]);
    await sim.close();

    return {
      debMb: mb(statSync(artifacts["deb-x64"]!).size),
      tarGzMb: mb(statSync(artifacts["tar-x64"]!).size),
      tarXzMb: mb(statSync(artifacts["txz-x64"]!).size),
      installNoNetworkMs: Number(installed[1]),
      coldStartToFirstPollMs,
      idleRssMb: {
        agent: mb(agentKb * 1024),
        bareNode: mb(bareKb * 1024),
        ratio: Math.round((agentKb / bareKb) * 100) / 100,
        seconds: idleSeconds,
      },
    };
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
