// The arm64 tarball's runtime runs: its AArch64 Node.js under qemu-user (Debian's qemu-aarch64, the AArch64 glibc of
// the arm64 cross packages given with -L; invoked explicitly, binfmt_misc is not needed) prints the version, and a short
// `sef run` with the launcher's own V8 flags reads the simulator on loopback and writes a record to a jsonl sink.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSimulator } from "../../src/testbed/simulator/server.js";
import { arm64SysrootDir } from "../setup/system-tools.js";
import { linuxArtifacts, packageVersion } from "./artifacts.js";
import { waitFor } from "../helpers/wait.js";

const scratch = mkdtempSync(join(tmpdir(), "sef-arm64-"));
let top: string;
beforeAll(async () => {
  const tarball = (await linuxArtifacts(["tar-arm64"]))["tar-arm64"]!;
  const unpacked = spawnSync("tar", ["-xzf", tarball, "-C", scratch], { encoding: "utf8" });
  if (unpacked.status !== 0) throw new Error(`tar -xzf ${tarball}: ${unpacked.stderr}`);
  top = join(scratch, `sef-${packageVersion}-linux-arm64`);
}, 900_000);
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** The command line that runs the tarball's own AArch64 node under qemu (what bin/sef execs on an arm64 machine). */
function underQemu(nodeArgs: readonly string[]): string[] {
  return ["-L", arm64SysrootDir, join(top, "lib/sef/node"), ...nodeArgs];
}

/** The V8 flags the tarball's launcher (bin/sef) gives `sef run`. */
function launcherRunFlags(): string[] {
  const launcher = readFileSync(join(top, "bin/sef"), "utf8");
  const line =
    /exec "\$\{here\}\/\.\.\/lib\/sef\/node" ((?:--[\w-]+ )+)"\$\{here\}\/\.\.\/lib\/sef\/sef\.mjs" "\$@"/.exec(
      launcher,
    );
  if (!line) throw new Error(`${join(top, "bin/sef")}: no \`exec node FLAGS sef.mjs\` line for run`);
  return line[1]!.trim().split(" ");
}

describe("the arm64 runtime under qemu-user", () => {
  it("prints its versions: Node.js and sef", () => {
    const node = spawnSync("qemu-aarch64", underQemu(["--version"]), { encoding: "utf8", timeout: 120_000 });
    expect(node.status, node.stderr).toBe(0);
    expect(node.stdout.trim()).toBe(process.version); // the pinned runtime, the same release as the x64 one
    const sef = spawnSync("qemu-aarch64", underQemu([join(top, "lib/sef/sef.mjs"), "--version"]), {
      encoding: "utf8",
      timeout: 120_000,
    });
    expect(sef.status, sef.stderr).toBe(0);
    expect(sef.stdout.trim()).toBe(packageVersion);
  }, 240_000);

  it("runs `sef run` against the simulator on loopback and writes a transition record to a jsonl sink; SIGTERM ends it with 0", async () => {
    const sim = await startSimulator({ scenario: "idle" });
    const dir = mkdtempSync(join(scratch, "run-"));
    const out = join(dir, "records.jsonl");
    const args = [
      join(top, "lib/sef/sef.mjs"),
      "run",
      "--imds-url",
      sim.url,
      "--data-dir",
      join(dir, "data"),
      "--sink",
      `jsonl:${out}`,
      "--metrics-port",
      "0",
      "--poll-interval-ms",
      "250",
    ];
    const agent = spawn("qemu-aarch64", underQemu([...launcherRunFlags(), ...args]), {
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    agent.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | string>((resolve) =>
      agent.on("exit", (code, signal) => resolve(code ?? signal ?? "unknown")),
    );
    const eventId = "A4A4A4A4-0000-4000-8000-000000000064";
    try {
      await waitFor("the agent to poll", () => sim.requestLog("/metadata/scheduledevents").length > 0, {
        timeoutMs: 150_000,
        detail: () => stderr.slice(-2000),
      });
      sim.setEvents([{ EventId: eventId, EventType: "Reboot", Resources: ["WestNO_0"], notBeforeInSeconds: 600 }]);
      const line = await waitFor(
        "a transition record in the jsonl sink",
        () =>
          existsSync(out)
            ? readFileSync(out, "utf8")
                .split("\n")
                .find((l) => l.includes(eventId))
            : undefined,
        {
          timeoutMs: 60_000,
          detail: () => stderr.slice(-2000),
        },
      );
      expect(JSON.parse(line)).toMatchObject({
        RecordType: "Transition",
        EventId: eventId,
        EventStatus: "Scheduled",
        AgentVersion: packageVersion,
      });
      agent.kill("SIGTERM");
      expect(await exited).toBe(0);
    } finally {
      agent.kill("SIGKILL");
      await sim.close();
    }
  }, 300_000);
});
