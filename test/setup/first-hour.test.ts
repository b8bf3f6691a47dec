// A newcomer's first hour, on a clean clone: the files git sees (tracked or new, not ignored: no node_modules, no
// dist/, no caches) copied into a fresh directory, `npm ci` there (from npm's cache), then what the README promises —
// `npx sef --help`, `npx sef-testbed --help`, `npx sef-fleet --help`, `npx sef --version` — and every command of
// CONTRIBUTING.md's inner loop, run as printed (the agent and the simulator in a network namespace of their own, so
// their fixed port meets nothing else). Needs root (unshare) and npm's cache of this checkout's dependencies.
import { spawn, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { repoRoot } from "../package/artifacts.js";
import { waitUntil } from "../helpers/wait.js";

const clone = mkdtempSync(join(tmpdir(), "sef-first-hour-"));
afterAll(() => rmSync(clone, { recursive: true, force: true }), 600_000);

/** A newcomer's environment: no npm script's variables, no SEF_* setting, no node_modules/.bin of this checkout on PATH. */
const env: NodeJS.ProcessEnv = {
  ...Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !/^(npm_|SEF_|VITEST|NODE_OPTIONS$|INIT_CWD$)/.test(name)),
  ),
  PATH: (process.env.PATH ?? "")
    .split(delimiter)
    .filter((dir) => !dir.includes("node_modules"))
    .join(delimiter),
};

function inClone(
  command: string,
  timeoutMs: number,
): { status: number | null; stdout: string; stderr: string; seconds: number } {
  const startedMs = performance.now();
  const result = spawnSync("sh", ["-c", command], {
    cwd: clone,
    env,
    encoding: "utf8",
    timeout: timeoutMs,
    maxBuffer: 1 << 26,
  });
  return {
    status: result.status,
    stdout: result.stdout,
    stderr: result.stderr,
    seconds: Math.round((performance.now() - startedMs) / 100) / 10,
  };
}

/** The commands of CONTRIBUTING.md's "The inner loop" block, comments stripped. */
function innerLoop(): string[] {
  const text = readFileSync(join(clone, "CONTRIBUTING.md"), "utf8");
  const block = /## The inner loop[\s\S]*?```bash\n([\s\S]*?)```/.exec(text)?.[1] ?? "";
  return block
    .split("\n")
    .map((line) => line.replace(/\s+#\s.*$/, "").trim())
    .filter((line) => line !== "");
}

beforeAll(() => {
  const listed = spawnSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], {
    cwd: repoRoot,
    encoding: "utf8",
    maxBuffer: 1 << 26,
  });
  for (const file of listed.stdout.split("\0").filter((f) => f !== "" && existsSync(join(repoRoot, f)))) {
    mkdirSync(dirname(join(clone, file)), { recursive: true });
    cpSync(join(repoRoot, file), join(clone, file), { verbatimSymlinks: true });
  }
  const install = inClone("npm ci --prefer-offline --no-audit --no-fund", 1_500_000);
  expect(install.status, install.stderr.slice(-3000)).toBe(0);
  console.log(`first hour: npm ci took ${install.seconds} s`);
}, 1_600_000);

describe("a clean clone after npm ci", () => {
  it("has the sef, sef-testbed and sef-fleet commands: their --help, and sef --version", () => {
    const version = (JSON.parse(readFileSync(join(repoRoot, "src/agent/package.json"), "utf8")) as { version: string })
      .version;
    for (const [command, says] of [
      ["npx sef --help", /^Usage: sef \[options\] \[command\]/m],
      ["npx sef-testbed --help", /^Usage: sef-testbed \[options\] \[command\]/m],
      ["npx sef-fleet --help", /^Usage: sef-fleet \[options\]/m],
      ["npx sef --version", new RegExp(`^${version.replace(/\./g, "\\.")}\n$`)],
    ] as const) {
      const result = inClone(command, 120_000);
      expect(result.status, `${command}: ${result.stderr}`).toBe(0);
      expect(result.stdout, command).toMatch(says);
    }
  }, 600_000);

  it("runs every command of CONTRIBUTING.md's inner loop as printed", async () => {
    const commands = innerLoop();
    expect(commands[0]).toBe("npm ci"); // run above
    const elsewhere = new Map([
      ["npm run typecheck", "test/package/static-checks.test.ts"],
      ["npm start", "test/integration/demo.test.ts"],
    ]);
    for (const [command, where] of elsewhere) {
      expect(commands, command).toContain(command);
      expect(existsSync(join(repoRoot, where)), where).toBe(true);
    }
    // npm test's first file runs the type-check (and the lint) on these very files.
    expect(readFileSync(join(repoRoot, "test/package/static-checks.test.ts"), "utf8")).toMatch(
      /for \(const script of \["typecheck", "lint"\]\)/,
    );
    const background = commands.filter((c) => c.endsWith("&"));
    const agent = commands.find((c) => c.startsWith("npx sef run "));
    expect(background).toHaveLength(1);
    expect(agent).toBeDefined();
    for (const command of commands
      .slice(1)
      .filter((c) => !elsewhere.has(c) && !background.includes(c) && c !== agent)) {
      const result = inClone(command, 600_000);
      expect(result.status, `${command}:\n${result.stdout.slice(-2000)}\n${result.stderr.slice(-2000)}`).toBe(0);
      console.log(`first hour: ${command} took ${result.seconds} s`);
    }
    await runAgentWithSimulator(background[0]!, agent!);
  }, 1_200_000);
});

/** The simulator in the background and the agent in the foreground, as printed, until a transition arrives; Ctrl+C. */
async function runAgentWithSimulator(simulator: string, agent: string): Promise<void> {
  const script = `ip link set lo up\n${simulator}\n${agent}\n`;
  const child = spawn("unshare", ["--net", "sh", "-c", script], {
    cwd: clone,
    env,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise((resolve) => child.once("close", resolve));
  try {
    await waitUntil(
      () => stdout.includes('"RecordType":"Transition"'),
      180_000,
      `a transition record on the agent's stdout\n${stderr.slice(-3000)}`,
    );
  } finally {
    process.kill(-child.pid!, "SIGINT"); // Ctrl+C: the terminal's foreground process group
    await exited;
  }
  expect(stderr, "the agent stopped cleanly on Ctrl+C").toMatch(/"msg":"agent stopped"/);
}
