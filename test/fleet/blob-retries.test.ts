// The fleet's Blob requests against a failing Blob store (a local peer in front of Azurite answering 503): each request
// is tried once, and the only retry is the fleet's own (fleet state, checkpoints) or the Event Hubs load balancer's next
// cycle (ownership claims) — counted at the peer, one request per retry.
import { EventHubProducerClient } from "@azure/event-hubs";
import { pino } from "pino";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startFleetService, type FleetService } from "../../src/fleet/fleet-service.js";
import { fleetSettingsSchema } from "../../src/fleet/settings.js";
import { startEventHubsEmulator, type EventHubsEmulator } from "../../src/testbed/peers/eventhubs/server.js";
import { startNotifyPeer, type NotifyPeer } from "../../src/testbed/peers/notify/server.js";
import { waitFor } from "../helpers/wait.js";
import { startAzurite, type Azurite } from "./azurite.js";
import { startBlobFaultProxy, type BlobFaultProxy } from "./blob-fault-proxy.js";
import { fleetTransition, vm } from "./records.js";

let hub: EventHubsEmulator;
let azurite: Azurite;
let peer: NotifyPeer;
let proxy: BlobFaultProxy;
let service: FleetService | undefined;
const logs: Array<{ msg?: string; partitionId?: string }> = [];

beforeAll(async () => {
  [hub, azurite, peer] = await Promise.all([
    startEventHubsEmulator({ hubName: "fleet", partitionCount: 1 }),
    startAzurite(),
    startNotifyPeer(),
  ]);
  proxy = await startBlobFaultProxy(azurite.connectionString);
}, 150_000);

afterAll(async () => {
  await service?.stop(5000);
  await proxy?.close();
  await Promise.all([hub?.close(), azurite?.stop(), peer?.close()]);
}, 30_000);

const logged = (msg: string, partitionId?: string): number =>
  logs.filter((l) => l.msg === msg && (partitionId === undefined || l.partitionId === partitionId)).length;

it("makes one Blob request per retry: ownership claims per load-balancing cycle, fleet state and checkpoints per fleet retry", async () => {
  const settings = fleetSettingsSchema.parse({
    eventHubs: {
      consumerGroup: "$Default",
      connection: { connectionString: hub.connectionString, maxRetries: 1, retryDelayMs: 100, tryTimeoutMs: 5000 },
    },
    checkpoints: { connectionStringEnv: "TEST_STORAGE", containerName: "fleet-retries" },
    targets: [{ name: "chat", type: "slack", urlEnv: "TEST_SLACK_URL" }],
    rules: [{ name: "freezes only", eventTypes: ["Freeze"], targets: ["chat"] }], // the Reboot sent below notifies nobody
    tickMs: 200,
    loadBalancing: { updateIntervalMs: 300, ownershipExpirationMs: 3000 },
    metrics: { host: "127.0.0.1", port: 0 },
  });
  const logger = pino(
    { level: "info" },
    { write: (line: string) => void logs.push(JSON.parse(line) as (typeof logs)[number]) },
  );
  const env = { TEST_STORAGE: proxy.connectionString, TEST_SLACK_URL: `${peer.url}/slack/services/T000/B000/XXXX` };

  proxy.failNextWrites("ownership", 2);
  service = await startFleetService({ settings, env, logger });
  await waitFor("the partition claimed", () => service!.ownedPartitions().length === 1, { timeoutMs: 20_000 });
  // Each failed claim was one request, and one load-balancing cycle that told processError (partitionId "").
  expect(proxy.writes("ownership")["503"]).toBe(2);
  expect(logged("event hubs error", "")).toBe(2);

  proxy.failNextWrites("state", 3);
  proxy.failNextWrites("checkpoint", 2);
  const producer = new EventHubProducerClient(hub.connectionString);
  try {
    const one = vm(0);
    await producer.sendBatch([
      {
        body: fleetTransition("E7E7E7E7-0000-4000-8000-000000000001", "Scheduled", one, [one]),
        contentType: "application/json",
      },
    ]);
  } finally {
    await producer.close();
  }
  await waitFor(
    "the checkpoint written after the faults",
    () => (proxy.writes("checkpoint")["201"] ?? 0) + (proxy.writes("checkpoint")["200"] ?? 0) >= 1,
    { timeoutMs: 30_000 },
  );
  // Each 503 was one attempt of the fleet's own retry loop, logged once; the next attempt was answered.
  expect(proxy.writes("state")["503"]).toBe(3);
  expect(logged("could not save the partition's fleet state; retrying the batch")).toBe(3);
  expect(proxy.writes("checkpoint")["503"]).toBe(2);
  expect(logged("could not save the checkpoint; retrying")).toBe(2);
}, 90_000);
