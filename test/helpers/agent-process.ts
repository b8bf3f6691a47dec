// Runs the built `sef` CLI as a child process, the way operators and systemd do, and collects its output.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { assertBuiltTreesCurrent } from "./dist-freshness.js";
import { waitUntil } from "./wait.js";

export { waitUntil };

export const cliPath = fileURLToPath(new URL("../../src/agent/dist/cli/main.js", import.meta.url));
/** The built fleet service CLI (`sef-fleet`). */
export const fleetCliPath = fileURLToPath(new URL("../../src/fleet/dist/cli/main.js", import.meta.url));
/** The built testbed CLI (`sef-testbed simulate|emulate`). */
export const testbedCliPath = fileURLToPath(new URL("../../src/testbed/dist/cli.js", import.meta.url));

// Whoever spawns the built code imports this module: refuse a build older than the sources (vitest's global set-up
// rebuilds first; a script run outside vitest must `npm run build`).
assertBuiltTreesCurrent();

export interface RunningProcess {
  readonly child: ChildProcess;
  readonly stdout: () => string;
  readonly stderr: () => string;
  /** Resolves with the exit code (or the signal name) when the process ends. */
  readonly exited: Promise<number | string>;
  /** Resolves with the first stdout line matching `pattern`. */
  waitForLine(pattern: RegExp, timeoutMs?: number): Promise<string>;
  stop(signal?: NodeJS.Signals): Promise<number | string>;
}

/** The V8 flags the Linux launcher (`infra/linux/sef`) gives `sef run`, read from the launcher itself. */
export function launcherRunFlags(): string[] {
  const launcher = readFileSync(fileURLToPath(new URL("../../infra/linux/sef", import.meta.url)), "utf8");
  const line = /exec "\$\{here\}\/\.\.\/lib\/sef\/node" ((?:--[\w-]+ )+)"\$\{here\}\/\.\.\/lib\/sef\/sef\.mjs"/.exec(
    launcher,
  );
  if (!line) throw new Error("infra/linux/sef: no `exec node FLAGS sef.mjs` line for run");
  return line[1]!.trim().split(" ");
}

/**
 * `nodeFlags`: V8/Node flags before the CLI (e.g. `launcherRunFlags()`, to run it as the packaged launcher does);
 * `cli`: another entry point than the built dist/ (e.g. the esbuild bundle the packages ship, `sef.mjs`); `cwd`: where it runs.
 */
export function runCli(
  args: string[],
  options: { env?: NodeJS.ProcessEnv; nodeFlags?: readonly string[]; cli?: string; cwd?: string } = {},
): RunningProcess {
  const child = spawn(process.execPath, [...(options.nodeFlags ?? []), options.cli ?? cliPath, ...args], {
    env: { ...process.env, ...options.env },
    ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  const listeners = new Set<() => void>();
  child.stdout!.on("data", (chunk: Buffer) => {
    out += chunk.toString();
    for (const l of listeners) l();
  });
  child.stderr!.on("data", (chunk: Buffer) => (err += chunk.toString()));
  const exited = new Promise<number | string>((resolve) =>
    child.on("exit", (code, signal) => resolve(code ?? signal ?? "unknown")),
  );
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    waitForLine(pattern, timeoutMs = 15_000) {
      return new Promise((resolve, reject) => {
        const check = (): void => {
          const line = out.split("\n").find((l) => pattern.test(l));
          if (line !== undefined) {
            listeners.delete(check);
            clearTimeout(timer);
            resolve(line);
          }
        };
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(
            new Error(
              `no line matching ${pattern} within ${timeoutMs} ms; stdout:\n${out}\nstderr:\n${err.slice(-3000)}`,
            ),
          );
        }, timeoutMs);
        listeners.add(check);
        check();
      });
    },
    async stop(signal = "SIGTERM") {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** JSON log lines of a child's stderr (other lines skipped). */
export function logLines(stderr: string): Record<string, unknown>[] {
  return stderr.split("\n").flatMap((line) => {
    const start = line.indexOf("{");
    if (start < 0) return [];
    try {
      return [JSON.parse(line.slice(start)) as Record<string, unknown>];
    } catch {
      return [];
    }
  });
}

/** Waits for the agent's "endpoints listening" log line and returns the metrics server's base URL. */
export async function waitForMetricsUrl(proc: RunningProcess, timeoutMs = 15_000): Promise<string> {
  let url: string | undefined;
  await waitUntil(
    () => {
      url = logLines(proc.stderr()).find((l) => typeof l.url === "string" && /endpoints listening/.test(String(l.msg)))
        ?.url as string | undefined;
      return url !== undefined;
    },
    timeoutMs,
    "the metrics URL in the agent's log",
  );
  return url!;
}

/** Reads a JSONL file of records (missing file = none). */
export function readJsonl<T = Record<string, unknown>>(path: string): T[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as T);
}
