// The persisted agent id: created once, read back unchanged, replaced (and said so) when the file is not a UUID.
import { describe, expect, it } from "vitest";
import { mkdtempSync, readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { agentIdFileName, loadOrCreateAgentId } from "../../src/agent/pipeline/agent-id.js";

describe("loadOrCreateAgentId", () => {
  it("creates a random UUID once (creating the directory) and reads the same one back", () => {
    const dir = join(mkdtempSync(join(tmpdir(), "sef-agent-id-")), "data");
    const first = loadOrCreateAgentId(dir);
    expect(first.created).toBe(true);
    expect(first.agentId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(loadOrCreateAgentId(dir)).toEqual({ agentId: first.agentId, created: false });
    expect(readFileSync(join(dir, agentIdFileName), "utf8")).toBe(`${first.agentId}\n`);
    expect(statSync(join(dir, agentIdFileName)).mode & 0o007, "not readable by others").toBe(0);
    expect(readdirSync(dir)).toEqual([agentIdFileName]);
    expect(loadOrCreateAgentId(join(mkdtempSync(join(tmpdir(), "sef-agent-id-")), "data")).agentId).not.toBe(
      first.agentId,
    );
  });

  it("replaces a file that does not hold a UUID, and says why", () => {
    const dir = mkdtempSync(join(tmpdir(), "sef-agent-id-"));
    writeFileSync(join(dir, agentIdFileName), "garbage\n");
    const loaded = loadOrCreateAgentId(dir);
    expect(loaded.created).toBe(true);
    expect(loaded.replaced).toMatch(/did not hold a UUID/);
    expect(loadOrCreateAgentId(dir)).toEqual({ agentId: loaded.agentId, created: false });
  });
});
