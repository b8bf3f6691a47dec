// Sink health through the built agent: Log Analytics 401/403/404 are retried (nothing dead-lettered) and reported by
// /readyz and sef_sink_failing at once; /readyz also fails, naming the sink, when a sink dead-letters everything it
// gets or delivers nothing for longer than readiness.sinkStallMs while records wait.
import { describe, expect, it } from "vitest";
import { createServer, type Server } from "node:http";
import { existsSync, mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AddressInfo } from "node:net";
import { startSimulator, type Simulator } from "../../src/testbed/simulator/server.js";
import { startLogsIngestionEmulator } from "../../src/testbed/peers/logs-ingestion/server.js";
import { waitForMetricsUrl, runCli, waitUntil, type RunningProcess } from "../helpers/agent-process.js";
import { metricValue } from "../helpers/metrics.js";

function startAgent(
  dir: string,
  imdsUrl: string,
  extra: Record<string, unknown>,
  env: NodeJS.ProcessEnv = {},
): RunningProcess {
  const path = join(dir, "config.json");
  writeFileSync(
    path,
    JSON.stringify({
      imdsUrl,
      pollIntervalMs: 200,
      dataDir: join(dir, "data"),
      heartbeatIntervalMs: 3_600_000,
      metricsPort: 0,
      ...extra,
    }),
  );
  return runCli(["run", "--config", path], { env });
}

async function baseUrl(agent: RunningProcess): Promise<string> {
  return waitForMetricsUrl(agent);
}

async function readyz(base: string): Promise<{ status: number; failed: string[] }> {
  const res = await fetch(`${base}/readyz`);
  return { status: res.status, failed: ((await res.json()) as { failed: string[] }).failed };
}

async function target(status: number): Promise<{ url: string; hits: () => number; server: Server }> {
  let hits = 0;
  const server = createServer((req, res) => {
    hits += 1;
    req.resume();
    req.on("end", () => res.writeHead(status).end("no"));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, hits: () => hits, server };
}

function threeEvents(sim: Simulator): void {
  sim.setEvents(
    [1, 2, 3].map((i) => ({
      EventId: `5EA17E00-0000-4000-8000-00000000000${i}`,
      EventType: "Reboot",
      Resources: ["WestNO_0"],
      notBeforeInSeconds: 600,
    })),
  );
}

describe("sink health", () => {
  it("Log Analytics 403: retried, nothing dead-lettered, /readyz and sef_sink_failing say so until it clears", async () => {
    const sim = await startSimulator({ scenario: "idle" });
    const peer = await startLogsIngestionEmulator();
    peer.faults.failNext(100_000, { status: 403 });
    const dir = mkdtempSync(join(tmpdir(), "sef-health-la-"));
    const agent = startAgent(
      dir,
      sim.url,
      {
        sinks: ["loganalytics"],
        loganalytics: { endpoint: peer.endpoint, ruleId: peer.ruleId, caCertFile: peer.caCertPath, lingerMs: 0 },
      },
      {
        AZURE_POD_IDENTITY_AUTHORITY_HOST: sim.url,
      },
    );
    try {
      const base = await baseUrl(agent);
      await waitUntil(() => (peer.requests().statuses["403"] ?? 0) >= 2, 15_000, "two 403 answers");
      const verdict = await readyz(base);
      expect(verdict.status).toBe(503);
      expect(verdict.failed.join("\n")).toMatch(/^sink loganalytics: failing: HTTP 403 .*records stay in the outbox/m);
      expect(
        metricValue(await (await fetch(`${base}/metrics`)).text(), "sef_sink_failing", { sink: "loganalytics" }),
      ).toBe(1);
      const deadLetters = join(dir, "data", "dead-letter");
      expect(existsSync(deadLetters) ? readdirSync(deadLetters) : []).toEqual([]);

      peer.faults.clear(); // the role assignment arrived
      await waitUntil(() => peer.rows().length >= 1, 15_000, "the record to be delivered");
      await expect.poll(async () => (await readyz(base)).status, { timeout: 5000 }).toBe(200);
      expect(
        metricValue(await (await fetch(`${base}/metrics`)).text(), "sef_sink_failing", { sink: "loganalytics" }),
      ).toBe(0);
      expect(await agent.stop("SIGTERM")).toBe(0);
    } finally {
      await agent.stop("SIGKILL");
      await peer.close();
      await sim.close();
    }
  });

  it("a sink that dead-letters everything it gets makes /readyz fail, naming it", async () => {
    const sim = await startSimulator({ scenario: "idle" });
    const hook = await target(400);
    const dir = mkdtempSync(join(tmpdir(), "sef-health-dl-"));
    const agent = startAgent(dir, sim.url, { sinks: [`webhook:${hook.url}`], webhook: { lingerMs: 0 } });
    try {
      const base = await baseUrl(agent);
      threeEvents(sim);
      await expect
        .poll(async () => (await readyz(base)).failed.join("\n"), { timeout: 10_000 })
        .toMatch(/^sink webhook: dead-lettered the last \d+ records/m);
      expect((await readyz(base)).status).toBe(503);
      expect(await agent.stop("SIGTERM")).toBe(0);
    } finally {
      await agent.stop("SIGKILL");
      await new Promise((r) => hook.server.close(r));
      await sim.close();
    }
  });

  it("a sink that delivers nothing for longer than readiness.sinkStallMs while records wait makes /readyz fail", async () => {
    const sim = await startSimulator({ scenario: "idle" });
    const hook = await target(500);
    const dir = mkdtempSync(join(tmpdir(), "sef-health-stall-"));
    const agent = startAgent(dir, sim.url, {
      sinks: [`webhook:${hook.url}`],
      webhook: { lingerMs: 0 },
      readiness: { sinkStallMs: 1000 },
    });
    try {
      const base = await baseUrl(agent);
      await waitUntil(() => hook.hits() >= 1, 10_000, "the first attempt");
      await expect
        .poll(async () => (await readyz(base)).failed.join("\n"), { timeout: 10_000 })
        .toMatch(/^sink webhook: delivered nothing for \d+ ms while records wait \(limit 1000 ms\)$/m);
      expect(await agent.stop("SIGTERM")).toBe(0);
    } finally {
      await agent.stop("SIGKILL");
      await new Promise((r) => hook.server.close(r));
      await sim.close();
    }
  });
});
