// This installation's agent id: a random UUID created at the first start and kept in `<dataDir>/agent-id`, beside
// (not inside) sef.db, so moving a broken store aside keeps it. It makes RecordIds unique fleet-wide whatever IMDS said.
import { randomUUID } from "node:crypto";
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from "node:fs";
import { join } from "node:path";

export const agentIdFileName = "agent-id";
const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface LoadedAgentId {
  agentId: string;
  /** True when this call created it (first start, or the file was unreadable). */
  created: boolean;
  /** Why an existing file was replaced, if it was. */
  replaced?: string;
}

/** Reads the agent id, creating it (written to a temporary file, fsynced, renamed) when absent or unreadable. */
export function loadOrCreateAgentId(dataDir: string): LoadedAgentId {
  const path = join(dataDir, agentIdFileName);
  let replaced: string | undefined;
  try {
    const text = readFileSync(path, "utf8").trim();
    if (uuidPattern.test(text)) return { agentId: text.toLowerCase(), created: false };
    replaced = `${path} did not hold a UUID`;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
  mkdirSync(dataDir, { recursive: true, mode: 0o750 });
  const agentId = randomUUID();
  const temporary = `${path}.${process.pid}.tmp`;
  const fd = openSync(temporary, "w", 0o640);
  try {
    writeSync(fd, `${agentId}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temporary, path);
  return replaced === undefined ? { agentId, created: true } : { agentId, created: true, replaced };
}
