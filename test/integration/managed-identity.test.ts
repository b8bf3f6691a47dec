// Managed identity end to end through the built agent: the real ManagedIdentityCredential gets its token from
// `sef-testbed simulate` (AZURE_POD_IDENTITY_AUTHORITY_HOST), and the TLS Event Hubs peer checks the token's audience;
// with the token endpoint failing, each send attempt asks for a token once (the drainer is the only retry owner).
import { describe, expect, it } from "vitest";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startSimulator, type Simulator } from "../../src/testbed/simulator/server.js";
import { startEventHubsEmulator, type EventHubsEmulator } from "../../src/testbed/peers/eventhubs/server.js";
import { runCli, waitForMetricsUrl, waitUntil, type RunningProcess } from "../helpers/agent-process.js";

/** The agent with its Event Hubs sink on managed identity, its token from the simulator, sending to the TLS peer. */
function startAgent(sim: Simulator, hub: EventHubsEmulator, extra: Record<string, unknown> = {}): RunningProcess {
  const dir = mkdtempSync(join(tmpdir(), "sef-mi-"));
  const configPath = join(dir, "config.json");
  writeFileSync(
    configPath,
    JSON.stringify({
      imdsUrl: sim.url,
      pollIntervalMs: 200,
      dataDir: join(dir, "data"),
      sinks: ["eventhubs"],
      heartbeatIntervalMs: 0,
      metricsPort: 0,
      eventhubs: {
        fullyQualifiedNamespace: "localhost",
        eventHubName: "scheduled-events",
        credential: "managedIdentity",
        managedIdentityClientId: "11111111-2222-3333-4444-555555555555",
        customEndpointAddress: `amqps://localhost:${hub.port}`,
        lingerMs: 0,
      },
      ...extra,
    }),
  );
  return runCli(["run", "--config", configPath], {
    env: {
      AZURE_POD_IDENTITY_AUTHORITY_HOST: sim.url,
      NODE_EXTRA_CA_CERTS: hub.caCertPath!,
      SEF_EVENTHUBS_CONNECTION_STRING: "",
    },
  });
}

/** Token requests the simulator answered, by status (MSAL asks with and without a trailing slash: both count). */
function tokenRequests(sim: Simulator): Record<string, number> {
  const byStatus: Record<string, number> = {};
  for (const [path, counts] of Object.entries(sim.status().requests)) {
    if (path.replace(/\/$/, "") !== "/metadata/identity/oauth2/token") continue;
    for (const [status, n] of Object.entries(counts)) byStatus[status] = (byStatus[status] ?? 0) + n;
  }
  return byStatus;
}

describe("managed identity through the agent", () => {
  it("sends records to the TLS Event Hubs peer with a token minted by the simulator", async () => {
    const sim = await startSimulator({ scenario: "idle" });
    const hub = await startEventHubsEmulator({ hubName: "scheduled-events", tls: true, partitionCount: 2 });
    const agent = startAgent(sim, hub);
    const eventId = "E0E0E0E0-0000-4000-8000-00000000000A";
    try {
      sim.setEvents([{ EventId: eventId, EventType: "Preempt", Resources: ["WestNO_0"], notBeforeInSeconds: 30 }]);
      await waitUntil(() => hub.events().length >= 1, 30_000, "the record in the Event Hubs peer");
      expect(await agent.stop("SIGTERM")).toBe(0);
    } finally {
      await agent.stop("SIGKILL");
      await hub.close();
      await sim.close();
    }
    const [event] = hub.events();
    expect(JSON.parse(String(event!.body))).toMatchObject({
      EventId: eventId,
      EventStatus: "Scheduled",
      EventType: "Preempt",
    });
    expect(event!.properties).toMatchObject({
      RecordType: "Transition",
      EventStatus: "Scheduled",
      EventType: "Preempt",
    });
    expect(event!.partitionKey).toBe(eventId);
    // The token came from the simulator, for the user-assigned identity asked for.
    expect(tokenRequests(sim)["200"]).toBeGreaterThan(0);
    expect(agent.stderr()).not.toMatch(/eyJ[A-Za-z0-9_-]{20,}/); // no JWT in the logs
  }, 60_000);

  it("asks the failing token endpoint once per send attempt: no credential retry inside the drainer's", async () => {
    const failures = 3;
    const sim = await startSimulator({ scenario: "idle", tokenFault: { count: failures, status: 503 } });
    const hub = await startEventHubsEmulator({ hubName: "scheduled-events", tls: true, partitionCount: 2 });
    const agent = startAgent(sim, hub, { retry: { initialDelayMs: 200, maxDelayMs: 400 } });
    try {
      const metricsUrl = await waitForMetricsUrl(agent);
      sim.setEvents([
        {
          EventId: "E0E0E0E0-0000-4000-8000-00000000000B",
          EventType: "Reboot",
          Resources: ["WestNO_0"],
          notBeforeInSeconds: 30,
        },
      ]);
      await waitUntil(
        () => hub.events().length >= 1,
        30_000,
        "the record in the Event Hubs peer once the token endpoint answers",
      );
      const metrics = await (await fetch(`${metricsUrl}/metrics`)).text();
      const failedSends = Number(/^sef_sink_retries_total\{sink="eventhubs"\} (\d+)$/m.exec(metrics)?.[1]);
      // Every failed attempt asked for one token and got a 503; the attempt that got a token sent the record.
      expect({ failedSends, tokens: tokenRequests(sim) }).toEqual({
        failedSends: failures,
        tokens: { "503": failures, "200": 1 },
      });
      expect(await agent.stop("SIGTERM")).toBe(0);
    } finally {
      await agent.stop("SIGKILL");
      await hub.close();
      await sim.close();
    }
  }, 60_000);
});
