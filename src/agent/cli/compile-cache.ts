// Node's on-disk compile cache for the bundle (module.enableCompileCache): the second and later starts read V8's
// code cache instead of compiling the agent's JavaScript again. Best effort: an unwritable place only costs the saving.
import { mkdirSync, statSync } from "node:fs";
import { enableCompileCache } from "node:module";
import { homedir } from "node:os";
import { join, resolve, sep } from "node:path";

/**
 * Where the cache lives: NODE_COMPILE_CACHE when set (Node's own variable), else systemd's CacheDirectory
 * (`$CACHE_DIRECTORY`, /var/cache/sef for the unit), else the user's cache directory (`$XDG_CACHE_HOME/sef`,
 * `~/.cache/sef`, `%LOCALAPPDATA%\sef` on Windows). Undefined when none is known.
 */
export function compileCacheDir(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.NODE_COMPILE_CACHE) return env.NODE_COMPILE_CACHE;
  const systemd = env.CACHE_DIRECTORY?.split(":")[0];
  if (systemd) return join(systemd, "compile-cache");
  if (process.platform === "win32")
    return env.LOCALAPPDATA ? join(env.LOCALAPPDATA, "sef", "compile-cache") : undefined;
  if (env.XDG_CACHE_HOME) return join(env.XDG_CACHE_HOME, "sef", "compile-cache");
  let home: string;
  try {
    home = env.HOME || homedir();
  } catch {
    return undefined;
  }
  return home && home !== "/" ? join(home, ".cache", "sef", "compile-cache") : undefined;
}

/**
 * Creates `dir` one level at a time. Not `mkdir -p`: Node's recursive mkdir (and so enableCompileCache's) never
 * returns under some pseudo file systems (a HOME of /proc), and start-up must not hang on a cache.
 */
function ensureDirectory(dir: string): boolean {
  const [root = "", ...parts] = resolve(dir).split(sep);
  let path = root + sep;
  for (const part of parts.filter((p) => p !== "")) {
    path = join(path, part);
    try {
      mkdirSync(path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") return false;
    }
  }
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** Turns the cache on when a directory is known and can be made; never throws (NODE_DISABLE_COMPILE_CACHE=1 turns it off). */
export function enableCompileCacheIn(dir = compileCacheDir()): string | undefined {
  if (dir === undefined || !ensureDirectory(dir)) return undefined;
  try {
    const result = enableCompileCache(dir);
    return result.directory;
  } catch {
    return undefined;
  }
}
