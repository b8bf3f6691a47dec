// The metrics/health port already taken (issue 12 item 12): the built agent exits with the configuration code (2)
// and one stderr line naming the address, instead of exit 1 with the cause only in a JSON log. The listen address
// from SEF_METRICS_HOST (the chart's node IP): served there, and an address that is not this machine's is exit 2 too.
// The server bounds connections and the time a client may take to send its headers (real sockets).
import { describe, expect, it } from "vitest";
import { createServer, type AddressInfo } from "node:net";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startSimulator } from "../../src/testbed/simulator/server.js";
import { runCli, waitForMetricsUrl } from "../helpers/agent-process.js";
import { openRawConnection, type RawConnection } from "../helpers/raw-connection.js";
import { exitCodes } from "../../src/agent/cli/config-options.js";

describe("metrics port in use", () => {
  it("exits 2 with a message naming the port", async () => {
    const squatter = createServer();
    await new Promise<void>((resolve) => squatter.listen(0, "127.0.0.1", resolve));
    const port = (squatter.address() as AddressInfo).port;
    const sim = await startSimulator({ scenario: "idle" });
    const dir = mkdtempSync(join(tmpdir(), "sef-port-"));
    const agent = runCli([
      "run",
      "--imds-url",
      sim.url,
      "--data-dir",
      join(dir, "data"),
      "--sink",
      "stdout",
      "--metrics-port",
      String(port),
    ]);
    try {
      const code = await agent.exited;
      expect(code, agent.stderr()).toBe(exitCodes.config);
      const plain = agent
        .stderr()
        .split("\n")
        .filter((l) => l.startsWith("sef: "));
      expect(plain).toEqual([
        expect.stringMatching(new RegExp(`^sef: config: metrics\\.port: 127\\.0\\.0\\.1:${port} is already in use`)),
      ]);
      expect(agent.stderr()).not.toMatch(/^\s+at /m);
    } finally {
      await agent.stop("SIGKILL");
      await sim.close();
      await new Promise<void>((resolve) => squatter.close(() => resolve()));
    }
  });

  it("SEF_METRICS_HOST sets the listen address (another loopback address here; the chart's is the node's IP)", async () => {
    const sim = await startSimulator({ scenario: "idle" });
    const dir = mkdtempSync(join(tmpdir(), "sef-host-"));
    const agent = runCli(
      ["run", "--imds-url", sim.url, "--data-dir", join(dir, "data"), "--sink", "stdout", "--metrics-port", "0"],
      { env: { SEF_METRICS_HOST: "127.0.0.2" } },
    );
    try {
      const url = await waitForMetricsUrl(agent, 30_000);
      expect(new URL(url).hostname).toBe("127.0.0.2");
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      const port = new URL(url).port;
      await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();
      expect(await agent.stop("SIGTERM")).toBe(0);
    } finally {
      await agent.stop("SIGKILL");
      await sim.close();
    }
  });

  it("closes the connection past metrics.maxConnections and cuts a client slow to send its headers", async () => {
    const sim = await startSimulator({ scenario: "idle" });
    const dir = mkdtempSync(join(tmpdir(), "sef-bounds-"));
    const config = join(dir, "config.json");
    writeFileSync(
      config,
      JSON.stringify({
        imdsUrl: sim.url,
        dataDir: join(dir, "data"),
        sinks: ["stdout"],
        metrics: { port: 0, maxConnections: 2, headersTimeoutMs: 400, keepAliveTimeoutMs: 60_000 },
      }),
    );
    const agent = runCli(["run", "--config", config]);
    const open: RawConnection[] = [];
    try {
      const url = new URL(await waitForMetricsUrl(agent, 30_000));
      const connect = async () => {
        const c = await openRawConnection(url.hostname, Number(url.port));
        open.push(c);
        return c;
      };
      // Two kept-alive connections, each with an answered request: the server holds both.
      const held = [await connect(), await connect()];
      for (const c of held) {
        c.socket.write(`GET /healthz HTTP/1.1\r\nHost: ${url.host}\r\n\r\n`);
        await c.firstData;
        expect(c.received()).toMatch(/^HTTP\/1\.1 200 OK/);
      }
      // The third is accepted by the kernel and closed by the server at once, with nothing sent.
      const third = await connect();
      third.socket.write(`GET /healthz HTTP/1.1\r\nHost: ${url.host}\r\n\r\n`);
      await third.closed;
      expect(third.received()).toBe("");
      // Half a request line and headers that never end: 408, then the connection is closed (a slot freed).
      held[0]!.socket.write(`GET /metrics HTTP/1.1\r\nHost: ${url.host}\r\nX-Slow: `);
      const startedMs = performance.now();
      await held[0]!.closed;
      expect(held[0]!.received()).toMatch(/HTTP\/1\.1 408 Request Timeout/);
      expect(performance.now() - startedMs).toBeLessThan(20_000);
      // The other connection still works, and a new one is served again.
      held[1]!.socket.write(`GET /healthz HTTP/1.1\r\nHost: ${url.host}\r\nConnection: close\r\n\r\n`);
      await held[1]!.closed;
      expect(held[1]!.received()).toMatch(/\r\n\r\nok\n[\s\S]*HTTP\/1\.1 200 OK[\s\S]*\r\n\r\nok\n$/);
      expect((await fetch(`${url.origin}/healthz`)).status).toBe(200);
      expect(await agent.stop("SIGTERM")).toBe(0);
    } finally {
      open.forEach((c) => c.socket.destroy());
      await agent.stop("SIGKILL");
      await sim.close();
    }
  });

  it("a SEF_METRICS_HOST that is no address of this machine exits 2 naming metrics.host", async () => {
    const sim = await startSimulator({ scenario: "idle" });
    const dir = mkdtempSync(join(tmpdir(), "sef-host-"));
    // 192.0.2.1 (TEST-NET-1) is bound to no interface: binding it fails before any packet is sent.
    const agent = runCli(
      ["run", "--imds-url", sim.url, "--data-dir", join(dir, "data"), "--sink", "stdout", "--metrics-port", "9464"],
      { env: { SEF_METRICS_HOST: "192.0.2.1" } },
    );
    try {
      expect(await agent.exited, agent.stderr()).toBe(exitCodes.config);
      const plain = agent
        .stderr()
        .split("\n")
        .filter((l) => l.startsWith("sef: "));
      expect(plain).toEqual([
        expect.stringMatching(
          /^sef: config: metrics\.host: 192\.0\.2\.1:9464 is not an address of this machine \(EADDRNOTAVAIL\); set metrics\.host, --metrics-host or SEF_METRICS_HOST/,
        ),
      ]);
    } finally {
      await agent.stop("SIGKILL");
      await sim.close();
    }
  });
});
