// Runs Microsoft's Python clients (Debian's python3-azure, python3-uamqp) as child processes against the local peers.
// Debian's /usr/bin/python3 on purpose: a pyenv python3 earlier on PATH would not see Debian's packages.
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";

export const systemPython = "/usr/bin/python3";
const scriptsDir = fileURLToPath(new URL("./python/", import.meta.url));

export interface PythonRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `script` (a file of test/interop/python/) with `args`; killed after `timeoutMs`. Never throws. */
export function runPython(
  script: string,
  args: readonly string[],
  options: { timeoutMs: number; env?: NodeJS.ProcessEnv },
): Promise<PythonRun> {
  return new Promise((resolve) => {
    execFile(
      systemPython,
      [scriptsDir + script, ...args],
      {
        timeout: options.timeoutMs,
        killSignal: "SIGKILL",
        maxBuffer: 16 * 1024 * 1024,
        env: { ...process.env, PYTHONDONTWRITEBYTECODE: "1", ...options.env },
      },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === "number" ? error.code : null) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** Runs a script that prints one JSON object; fails with its stderr when it exits non-zero. */
export async function runPythonJson<T = Record<string, unknown>>(
  script: string,
  args: readonly string[],
  options: { timeoutMs: number; env?: NodeJS.ProcessEnv },
): Promise<T> {
  const run = await runPython(script, args, options);
  if (run.code !== 0) throw new Error(`${script} exited ${String(run.code)}:\n${run.stderr.slice(-4000)}`);
  return JSON.parse(run.stdout) as T;
}
