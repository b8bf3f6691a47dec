// The built agent with the Event Hubs sink: heartbeats reopen the connection the idle period closed, the agent's
// /metrics count the opens and closes, and after SIGTERM the goodbye heartbeat is the last event and no connection is left.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startEventHubsEmulator } from "../../src/testbed/peers/eventhubs/server.js";
import { startSimulator } from "../../src/testbed/simulator/server.js";
import { loadScenario } from "../../src/testbed/simulator/scenarios.js";
import { runCli, waitUntil } from "../helpers/agent-process.js";

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const metricValue = (text: string, line: RegExp): number => Number(line.exec(text)?.[1] ?? NaN);

describe("agent + eventhubs sink idle close", () => {
  it("reopens for each heartbeat after the idle close, counts it in /metrics, ends with the goodbye and no connection", async () => {
    const peer = await startEventHubsEmulator({ hubName: "sef-agent", partitionCount: 2 });
    cleanups.push(() => peer.close());
    const sim = await startSimulator({ scenario: loadScenario("idle") });
    cleanups.push(() => sim.close());
    const dir = mkdtempSync(join(tmpdir(), "sef-eh-idle-"));
    const config = join(dir, "config.json");
    writeFileSync(
      config,
      JSON.stringify({ eventhubs: { idleCloseMs: 200, lingerMs: 0, maxRetries: 1, retryDelayMs: 50 } }),
    );
    const agent = runCli(
      [
        "run",
        "--config",
        config,
        "--imds-url",
        sim.url,
        "--data-dir",
        join(dir, "data"),
        "--sink",
        "eventhubs",
        "--heartbeat-interval-ms",
        "1000",
        "--metrics-port",
        "0",
      ],
      { env: { SEF_EVENTHUBS_CONNECTION_STRING: peer.connectionString } },
    );
    cleanups.push(() => agent.stop("SIGKILL"));

    await waitUntil(
      () => peer.events().length >= 3,
      20_000,
      `three heartbeats at the peer; stderr:\n${agent.stderr().slice(-2000)}`,
    );
    expect(peer.stats.connectionsOpened).toBeGreaterThanOrEqual(2);
    expect(peer.stats.connectionsPeak).toBe(1);
    const url = /"url":"(http:\/\/[^"]+)"/.exec(agent.stderr())?.[1];
    expect(url, agent.stderr().slice(-2000)).toBeDefined();
    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(
      metricValue(metrics, /^sef_eventhubs_connection_opens_total\{sink="eventhubs"\} (\d+)$/m),
    ).toBeGreaterThanOrEqual(2);
    expect(
      metricValue(metrics, /^sef_eventhubs_connection_closes_total\{sink="eventhubs",reason="idle"\} (\d+)$/m),
    ).toBeGreaterThanOrEqual(1);
    expect(metrics).toMatch(/^sef_eventhubs_connection_open\{sink="eventhubs"\} [01]$/m);

    expect(await agent.stop("SIGTERM")).toBe(0);
    const last = JSON.parse(String(peer.events().at(-1)?.body)) as { RecordType: string; Outcome?: string };
    expect(last).toMatchObject({ RecordType: "Heartbeat", Outcome: "Stopping" });
    await waitUntil(() => peer.stats.connectionsCurrent === 0, 5000, "no connection left after the agent exited");
  });
});
