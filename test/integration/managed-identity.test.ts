// Managed identity end to end through the built agent: the real ManagedIdentityCredential gets its token from
// `sef-testbed simulate` (AZURE_POD_IDENTITY_AUTHORITY_HOST), and the TLS Event Hubs peer checks the token's audience.
import { describe, expect, it } from "vitest";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startSimulator } from "../../src/testbed/simulator/server.js";
import { startEventHubsEmulator } from "../../src/testbed/peers/eventhubs/server.js";
import { runCli, waitUntil } from "../helpers/agent-process.js";

describe("managed identity through the agent", () => {
  it("sends records to the TLS Event Hubs peer with a token minted by the simulator", async () => {
    const sim = await startSimulator({ scenario: "idle" });
    const hub = await startEventHubsEmulator({ hubName: "scheduled-events", tls: true, partitionCount: 2 });
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
      }),
    );
    const agent = runCli(["run", "--config", configPath], {
      env: { AZURE_POD_IDENTITY_AUTHORITY_HOST: sim.url, NODE_EXTRA_CA_CERTS: hub.caCertPath!, SEF_EVENTHUBS_CONNECTION_STRING: "" },
    });
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
    expect(JSON.parse(String(event!.body))).toMatchObject({ EventId: eventId, EventStatus: "Scheduled", EventType: "Preempt" });
    expect(event!.properties).toMatchObject({ RecordType: "Transition", EventStatus: "Scheduled", EventType: "Preempt" });
    expect(event!.partitionKey).toBe(eventId);
    // The token came from the simulator, for the user-assigned identity asked for.
    const tokenRequests = Object.entries(sim.status().requests).filter(([path]) => path.includes("/identity/oauth2/token"));
    expect(tokenRequests.length).toBeGreaterThan(0);
    expect(agent.stderr()).not.toMatch(/eyJ[A-Za-z0-9_-]{20,}/); // no JWT in the logs
  }, 60_000);
});
