// A server hint of `Retry-After: 0` (or any hint under the policy's minimum backoff) must not turn a sink's drain
// loop into a busy loop: the built agent, against real targets that throttle every request, stays ≤ 20 requests/s —
// and still retries (each target sees at least two rejected sends). And a busy Event Hub's pause is honoured: the
// AMQP peer's log shows no send between a server-busy answer and the pause the service asks for.
import { describe, expect, it } from "vitest";
import { createServer, type Server } from "node:http";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AddressInfo } from "node:net";
import { startSimulator } from "../../src/testbed/simulator/server.js";
import { startLogsIngestionEmulator } from "../../src/testbed/peers/logs-ingestion/server.js";
import { startEventHubsEmulator, type EventHubsEmulator } from "../../src/testbed/peers/eventhubs/server.js";
import { serverBusyRetryAfterMs } from "../../src/agent/sinks/eventhubs/classify.js";
import { runCli, waitUntil, type RunningProcess } from "../helpers/agent-process.js";

const measureMs = 2500;
const maxRequestsPerSecond = 20;

function agentConfig(dir: string, imdsUrl: string, extra: Record<string, unknown>): string {
  const path = join(dir, "config.json");
  // A heartbeat at start is the one record every sink gets to send (and be throttled on).
  writeFileSync(
    path,
    JSON.stringify({
      imdsUrl,
      pollIntervalMs: 500,
      dataDir: join(dir, "data"),
      heartbeatIntervalMs: 3_600_000,
      metricsPort: 0,
      shutdownFlushMs: 500,
      ...extra,
    }),
  );
  return path;
}

/** Counts requests from the first one on for `measureMs`, then returns the rate per second. */
async function measureRate(count: () => number): Promise<number> {
  await waitUntil(() => count() >= 1, 20_000, "the first request");
  const first = count();
  const startedMs = performance.now();
  await new Promise((r) => setTimeout(r, measureMs));
  return ((count() - first) * 1000) / (performance.now() - startedMs);
}

/**
 * The built agent with the Event Hubs sink against a hub answering every send server-busy. No retries inside the SDK:
 * each send at the hub is one attempt of the agent's drain loop.
 */
async function agentOnBusyHub(): Promise<{ hub: EventHubsEmulator; agent: RunningProcess; close(): Promise<void> }> {
  const sim = await startSimulator({ scenario: "idle" });
  const hub = await startEventHubsEmulator({ hubName: "scheduled-events", partitionCount: 2 });
  hub.faults.setServerBusy(true);
  const dir = mkdtempSync(join(tmpdir(), "sef-busy-eh-"));
  const config = agentConfig(dir, sim.url, { sinks: ["eventhubs"], eventhubs: { lingerMs: 0, maxRetries: 0 } });
  const agent = runCli(["run", "--config", config], { env: { SEF_EVENTHUBS_CONNECTION_STRING: hub.connectionString } });
  return {
    hub,
    agent,
    close: async () => {
      await agent.stop("SIGKILL");
      await hub.close();
      await sim.close();
    },
  };
}

describe("Retry-After: 0 is clamped to the minimum backoff", () => {
  it("webhook", async () => {
    let requests = 0;
    const target: Server = createServer((req, res) => {
      requests += 1;
      req.resume();
      req.on("end", () => res.writeHead(429, { "retry-after": "0" }).end("slow down"));
    });
    await new Promise<void>((r) => target.listen(0, "127.0.0.1", r));
    const sim = await startSimulator({ scenario: "idle" });
    const dir = mkdtempSync(join(tmpdir(), "sef-ra0-wh-"));
    const url = `http://127.0.0.1:${(target.address() as AddressInfo).port}/hook`;
    const agent = runCli([
      "run",
      "--config",
      agentConfig(dir, sim.url, { sinks: [`webhook:${url}`], webhook: { lingerMs: 0 } }),
    ]);
    try {
      const rate = await measureRate(() => requests);
      expect(rate).toBeLessThanOrEqual(maxRequestsPerSecond);
      expect(requests).toBeGreaterThanOrEqual(2); // it does retry
      expect(await agent.stop("SIGTERM")).toBe(0);
    } finally {
      await agent.stop("SIGKILL");
      await sim.close();
      await new Promise((r) => target.close(r));
    }
  });

  it("Log Analytics", async () => {
    const sim = await startSimulator({ scenario: "idle" });
    const peer = await startLogsIngestionEmulator();
    peer.faults.failNext(100_000, { status: 429, headers: { "Retry-After": "0" } });
    const dir = mkdtempSync(join(tmpdir(), "sef-ra0-la-"));
    const config = agentConfig(dir, sim.url, {
      sinks: ["loganalytics"],
      loganalytics: { endpoint: peer.endpoint, ruleId: peer.ruleId, caCertFile: peer.caCertPath, lingerMs: 0 },
    });
    const agent = runCli(["run", "--config", config], { env: { AZURE_POD_IDENTITY_AUTHORITY_HOST: sim.url } });
    try {
      const rate = await measureRate(() => peer.requests().count);
      expect(rate).toBeLessThanOrEqual(maxRequestsPerSecond);
      expect(peer.requests().statuses["429"]).toBeGreaterThanOrEqual(2);
      expect(await agent.stop("SIGTERM")).toBe(0);
    } finally {
      await agent.stop("SIGKILL");
      await peer.close();
      await sim.close();
    }
  });

  it("Event Hubs (server-busy)", async () => {
    const { hub, agent, close } = await agentOnBusyHub();
    try {
      const rate = await measureRate(() => hub.stats.sendsRejected);
      expect(rate).toBeLessThanOrEqual(maxRequestsPerSecond);
      // It does retry: after the service's ~4 s server-busy pause, the drain loop sends again and is rejected again.
      await waitUntil(() => hub.stats.sendsRejected >= 2, 20_000, "a second rejected send (the agent's retry)");
      expect(hub.stats.sendsAccepted).toBe(0);
      expect(await agent.stop("SIGTERM")).toBe(0);
    } finally {
      await close();
    }
  }, 45_000);

  it("Event Hubs: after a server-busy answer no send comes again before the pause the service asks for", async () => {
    const { hub, agent, close } = await agentOnBusyHub();
    try {
      await waitUntil(() => hub.sendLog().length >= 1, 20_000, "the first send");
      hub.faults.setServerBusy(false);
      await waitUntil(() => hub.stats.sendsAccepted >= 1, 20_000, "the send after the pause");
      const sends = hub.sendLog();
      expect(sends.map((s) => s.outcome)).toEqual(["rejected:com.microsoft:server-busy", "accepted"]);
      expect(sends[1]!.atMs - sends[0]!.atMs).toBeGreaterThanOrEqual(serverBusyRetryAfterMs - 20);
      expect(await agent.stop("SIGTERM")).toBe(0);
    } finally {
      await close();
    }
  }, 45_000);
});
