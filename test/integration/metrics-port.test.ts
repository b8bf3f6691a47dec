// The metrics/health port already taken (issue 12 item 12): the built agent exits with the configuration code (2)
// and one stderr line naming the address, instead of exit 1 with the cause only in a JSON log.
import { describe, expect, it } from "vitest";
import { createServer, type AddressInfo } from "node:net";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startSimulator } from "../../src/testbed/simulator/server.js";
import { runCli } from "../helpers/agent-process.js";
import { exitCodes } from "../../src/agent/cli/config-options.js";

describe("metrics port in use", () => {
  it("exits 2 with a message naming the port", async () => {
    const squatter = createServer();
    await new Promise<void>((resolve) => squatter.listen(0, "127.0.0.1", resolve));
    const port = (squatter.address() as AddressInfo).port;
    const sim = await startSimulator({ scenario: "idle" });
    const dir = mkdtempSync(join(tmpdir(), "sef-port-"));
    const agent = runCli(["run", "--imds-url", sim.url, "--data-dir", join(dir, "data"), "--sink", "stdout", "--metrics-port", String(port)]);
    try {
      const code = await agent.exited;
      expect(code, agent.stderr()).toBe(exitCodes.config);
      const plain = agent.stderr().split("\n").filter((l) => l.startsWith("sef: "));
      expect(plain).toEqual([expect.stringMatching(new RegExp(`^sef: config: metrics\\.port: 127\\.0\\.0\\.1:${port} is already in use`))]);
      expect(agent.stderr()).not.toMatch(/^\s+at /m);
    } finally {
      await agent.stop("SIGKILL");
      await sim.close();
      await new Promise<void>((resolve) => squatter.close(() => resolve()));
    }
  });
});
