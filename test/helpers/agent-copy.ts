// A copy of the agent that any user can run: the agent bundled as the packages ship it (sef.mjs and its chunks) and this
// Node binary, in a fresh 0755 directory under the system temp dir. For tests that drop privileges: the checkout (and
// its dist/ and node_modules/) may sit under a 0700 directory another user cannot even traverse.
import { chmodSync, copyFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { bundleAgent } from "../../infra/package/bundle.js";

export interface AgentCopy {
  /** The copied Node binary (0755). */
  readonly node: string;
  /** The bundled CLI entry point: `node cli run …`. */
  readonly cli: string;
  remove(): void;
}

export async function copyAgentForOtherUsers(): Promise<AgentCopy> {
  const repoRoot = resolve(import.meta.dirname, "../..");
  const version = (
    JSON.parse(readFileSync(join(repoRoot, "src", "agent", "package.json"), "utf8")) as { version: string }
  ).version;
  const dir = mkdtempSync(join(tmpdir(), "sef-agent-copy-"));
  chmodSync(dir, 0o755);
  const bundleDir = join(dir, "sef");
  await bundleAgent(repoRoot, bundleDir, version);
  const node = join(dir, "node");
  copyFileSync(process.execPath, node);
  chmodSync(node, 0o755);
  return { node, cli: join(bundleDir, "sef.mjs"), remove: () => rmSync(dir, { recursive: true, force: true }) };
}
