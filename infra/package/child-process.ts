// The packaging tools (dpkg-deb, rpmbuild, tar, gzip, xz) as awaited child processes, so that independent artifacts
// build side by side; a tool that fails rejects with its name and exit status (its stderr is passed through).
import { spawn, type SpawnOptions } from "node:child_process";
import { closeSync, openSync } from "node:fs";

function exited(command: string, child: ReturnType<typeof spawn>): Promise<void> {
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (code, signal) =>
      code === 0 ? resolve() : reject(new Error(`${command} failed (${signal ?? `exit ${code}`})`)),
    );
  });
}

/** Runs `command` to the end; its stdout is dropped, its stderr shown. */
export function run(
  command: string,
  args: readonly string[],
  options: Pick<SpawnOptions, "env" | "cwd"> = {},
): Promise<void> {
  return exited(command, spawn(command, args, { ...options, stdio: ["ignore", "ignore", "inherit"] }));
}

/** Runs `command` and returns its stdout. */
export async function capture(command: string, args: readonly string[]): Promise<Buffer> {
  const child = spawn(command, args, { stdio: ["ignore", "pipe", "inherit"] });
  const chunks: Buffer[] = [];
  child.stdout!.on("data", (chunk: Buffer) => chunks.push(chunk));
  await exited(command, child);
  return Buffer.concat(chunks);
}

/** Runs `command` with `input` on its stdin and its stdout written to `outFile`. */
export async function filterToFile(
  command: string,
  args: readonly string[],
  input: Buffer,
  outFile: string,
): Promise<void> {
  const out = openSync(outFile, "w");
  try {
    const child = spawn(command, args, { stdio: ["pipe", out, "inherit"] });
    child.stdin!.on("error", () => undefined); // a tool that stops reading fails by its exit status
    child.stdin!.end(input);
    await exited(command, child);
  } finally {
    closeSync(out);
  }
}
