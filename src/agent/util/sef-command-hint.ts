// The commands the agent tells an operator to run (in its logs and its commands' output), runnable as printed from any
// directory and any environment: paths absolute, `sef` commands with the data directory named, every word quoted.
import { resolve } from "node:path";

/** `sef ARGS --data-dir DIR` (DIR absolute), quoted as {@link shellCommand} does. */
export function sefCommandHint(args: readonly string[], dataDir: string): string {
  return shellCommand(["sef", ...args, "--data-dir", resolve(dataDir)]);
}

/** The words as one command line, each quoted for a POSIX shell (and PowerShell) when it needs it. */
export function shellCommand(words: readonly string[]): string {
  return words.map((word) => (/^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, "'\\''")}'`)).join(" ");
}
