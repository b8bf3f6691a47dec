// Child process of managed-identity.test.ts: NODE_EXTRA_CA_CERTS must be set before Node starts, so the
// sink's managed-identity path runs here. Sends the records given on stdin (JSON) and prints the SendResult; with
// SEF_TEST_IDLE_CLOSE_MS, waits for the idle close and sends them again (printing the second result).
import { silentLogger } from "../../src/agent/observability/logger.js";
import { createEventHubsSink, eventHubsSettingsSchema } from "../../src/agent/sinks/eventhubs/index.js";
import type { OutboxEntry } from "../../src/agent/delivery/outbox-entry.js";

const chunks: Buffer[] = [];
for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
const batch = JSON.parse(Buffer.concat(chunks).toString("utf8")) as OutboxEntry[];
const sink = createEventHubsSink(
  eventHubsSettingsSchema.parse({
    fullyQualifiedNamespace: "localhost",
    eventHubName: process.env["SEF_TEST_HUB"],
    customEndpointAddress: process.env["SEF_TEST_ENDPOINT"],
    credential: "managedIdentity",
    maxRetries: 0,
    tryTimeoutMs: 5000,
    ...(process.env["SEF_TEST_IDLE_CLOSE_MS"] ? { idleCloseMs: Number(process.env["SEF_TEST_IDLE_CLOSE_MS"]) } : {}),
  }),
  { logger: silentLogger() },
  {},
);
let result = await sink.send(batch, new AbortController().signal);
if (process.env["SEF_TEST_IDLE_CLOSE_MS"] && result.every((o) => o.kind === "delivered")) {
  await new Promise((resolve) => setTimeout(resolve, Number(process.env["SEF_TEST_IDLE_CLOSE_MS"]) + 300));
  result = await sink.send(batch, new AbortController().signal);
}
await sink.close();
process.stdout.write(JSON.stringify(result) + "\n");
