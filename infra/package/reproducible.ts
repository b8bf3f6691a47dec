// Makes a staged tree byte-stable before it is archived: fixed mtimes (SOURCE_DATE_EPOCH), normalized modes,
// and the archive tools' own timestamp and ordering options (the compressors' options: compression.ts).
import { execFileSync } from "node:child_process";
import { chmodSync, lstatSync, readdirSync, utimesSync } from "node:fs";
import { join } from "node:path";
import { capture, filterToFile } from "./child-process.js";
import { tarCompressor, type CompressionProfile, type TarCompression } from "./compression.js";

/** Seconds since the epoch stamped on every file: SOURCE_DATE_EPOCH, else the last commit's time. */
export function sourceDateEpoch(repoRoot: string): number {
  const fromEnv = process.env.SOURCE_DATE_EPOCH;
  if (fromEnv !== undefined && /^\d+$/.test(fromEnv)) return Number(fromEnv);
  try {
    return Number(execFileSync("git", ["log", "-1", "--format=%ct"], { cwd: repoRoot, encoding: "utf8" }).trim());
  } catch {
    return 0;
  }
}

/** Directories 0755, executables 0755, other files 0644 unless `modes` (relative path → mode) says otherwise. */
export function normalizeTree(root: string, epochS: number, modes: Readonly<Record<string, number>> = {}): void {
  const walk = (dir: string, rel: string): void => {
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name);
      const relPath = rel === "" ? name : `${rel}/${name}`;
      const stat = lstatSync(path);
      if (stat.isDirectory()) {
        walk(path, relPath);
        chmodSync(path, modes[relPath] ?? 0o755);
      } else if (!stat.isSymbolicLink()) {
        chmodSync(path, modes[relPath] ?? (stat.mode & 0o111 ? 0o755 : 0o644));
      }
      if (!stat.isSymbolicLink()) utimesSync(path, epochS, epochS);
    }
  };
  walk(root, "");
  utimesSync(root, epochS, epochS);
}

/**
 * Compressed tars of `dir` (as its own top-level folder), one per entry of `outFiles` (compression → file), all of the
 * same tar stream (each compressed by its own profile): sorted entries, root ownership and no timestamps of its own.
 */
export async function writeTarballs(
  parentDir: string,
  dirName: string,
  outFiles: Partial<Record<TarCompression, string>>,
  epochS: number,
  profileOf: (compression: TarCompression) => CompressionProfile,
): Promise<void> {
  const tar = await capture("tar", [
    "--sort=name",
    `--mtime=@${epochS}`,
    "--owner=0",
    "--group=0",
    "--numeric-owner",
    "--format=gnu",
    "-C",
    parentDir,
    "-cf",
    "-",
    dirName,
  ]);
  await Promise.all(
    Object.entries(outFiles).map(([compression, outFile]) => {
      const [command, ...args] = tarCompressor(compression as TarCompression, profileOf(compression as TarCompression));
      return filterToFile(command, args, tar, outFile);
    }),
  );
}
