// Whether an agent holds a data directory, for commands that write to its store (`sef dead-letter replay`).
// One small function on purpose: the data-dir lock file (sef.lock) replaces its body when it lands.
import { DatabaseSync } from "node:sqlite";
import { existsSync } from "node:fs";
import { join } from "node:path";

/**
 * Undefined when no agent seems to hold `dataDir`, else why we think one does. Two signs: the store is busy (an
 * IMMEDIATE transaction cannot start within `busyTimeoutMs`), or the pid the agent recorded at start is alive.
 */
export function runningAgent(dataDir: string, busyTimeoutMs = 250): string | undefined {
  const path = join(dataDir, "sef.db");
  if (!existsSync(path)) return undefined;
  const db = new DatabaseSync(path, { timeout: busyTimeoutMs });
  try {
    try {
      db.exec("BEGIN IMMEDIATE");
      db.exec("ROLLBACK");
    } catch (err) {
      return `the store ${path} is busy (${(err as Error).message})`;
    }
    const row = db.prepare("SELECT value FROM meta WHERE key = 'agent'").get() as { value: string } | undefined;
    const pid = row ? (JSON.parse(row.value) as { pid?: number }).pid : undefined;
    if (pid !== undefined && pid !== process.pid && isAlive(pid)) return `agent process ${pid} is running with this data directory`;
    return undefined;
  } catch {
    return undefined; // no meta table yet: nothing has run here
  } finally {
    db.close();
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}
