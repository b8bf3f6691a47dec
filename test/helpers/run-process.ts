// Runs a command to its end within a deadline (SIGKILL past it) and collects its output; a command that cannot start
// ends with code null and the reason in stderr.
import { spawn } from "node:child_process";

export interface ProcessResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function runProcess(
  command: string,
  args: readonly string[],
  timeoutMs: number,
  options: { env?: NodeJS.ProcessEnv } = {},
): Promise<ProcessResult> {
  return new Promise((resolve) => {
    const child = spawn(command, args, {
      env: options.env ?? process.env,
      stdio: ["ignore", "pipe", "pipe"],
      timeout: timeoutMs,
      killSignal: "SIGKILL",
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    child.on("error", (err) => (stderr += `${err.message}\n`));
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}
