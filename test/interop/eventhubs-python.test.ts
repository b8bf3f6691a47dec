// Microsoft's Python Event Hubs clients, unmodified (Debian's python3-azure and python3-uamqp), against the local
// Event Hubs peer over AMQPS with the connection string's SAS key: properties, sends, batches, receives.
import { afterEach, describe, expect, it } from "vitest";
import type { EventHubsEmulator } from "../../src/testbed/peers/eventhubs/server.js";
import { partitionIndexForKey } from "../../src/contract/partition-hash.js";
import { startPeerOnAmqpsPort } from "./amqps-address.js";
import { runPythonJson } from "./python.js";
import { startSimulator } from "../../src/testbed/simulator/index.js";

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function peer(): Promise<EventHubsEmulator> {
  const emulator = await startPeerOnAmqpsPort({ hubName: "py-hub", partitionCount: 2 });
  cleanups.push(() => emulator.close());
  return emulator;
}

interface ReceivedSummary {
  body: string;
  properties: Record<string, unknown>;
  partition_key: string | null;
  sequence_number: number;
  offset: string;
}

interface ClientResult {
  hub: { eventhub_name: string; partition_ids: string[] };
  partition_ids: string[];
  partition0_before: { is_empty: boolean; last_enqueued_sequence_number: number };
  partition0_after: { is_empty: boolean; last_enqueued_sequence_number: number; last_enqueued_offset: string };
  max_batch_size_bytes: number;
  earliest: Record<string, ReceivedSummary[]>;
  from_sequence_inclusive: ReceivedSummary[];
  from_offset_exclusive: ReceivedSummary[];
  latest: ReceivedSummary[];
}

describe("azure-eventhub (Python, pure-Python AMQP transport) → local Event Hubs peer", () => {
  it("reads hub and partition properties, sends events and keyed batches with properties, receives from earliest, sequence, offset and latest", async () => {
    const emulator = await peer();
    const result = await runPythonJson<ClientResult>(
      "eventhubs_client.py",
      [emulator.connectionString, emulator.caCertPath!, "pyamqp"],
      { timeoutMs: 120_000 },
    );

    expect(result.hub.eventhub_name).toBe("py-hub");
    expect(result.partition_ids).toEqual(["0", "1"]);
    expect(result.partition0_before.is_empty).toBe(true);
    expect(result.max_batch_size_bytes).toBe(1024 * 1024);

    // What the peer stored: the keyed batch on the partition the service's hash gives "vm-42", in order, with properties.
    const keyedPartition = String(partitionIndexForKey("vm-42", 2));
    const stored = emulator.events();
    const keyed = stored.filter((e) => e.partitionKey === "vm-42");
    expect(keyed.map((e) => [e.partitionId, e.body?.toString("utf8"), e.properties])).toEqual(
      [0, 1, 2].map((i) => [keyedPartition, `keyed-${i}`, { Index: i, Kind: "keyed" }]),
    );
    const partition0 = emulator.events("0").map((e) => e.body?.toString("utf8"));
    expect(partition0.filter((b) => !b?.startsWith("keyed-"))).toEqual(["single", "p0-0", "p0-1", "latest"]);

    // What the client read back from earliest: every event of each partition, in sequence order, with its metadata.
    const earliest0 = result.earliest["0"]!;
    expect(earliest0.map((e) => e.sequence_number)).toEqual(earliest0.map((_, i) => i));
    expect(earliest0.map((e) => e.body)).toEqual(partition0.slice(0, earliest0.length));
    const readKeyed = (result.earliest[keyedPartition] ?? []).filter((e) => e.partition_key === "vm-42");
    expect(readKeyed.map((e) => [e.body, e.properties])).toEqual(
      [0, 1, 2].map((i) => [`keyed-${i}`, { Index: i, Kind: "keyed" }]),
    );
    expect(result.partition0_after.last_enqueued_sequence_number).toBe(earliest0.length - 1);
    expect(result.partition0_after.last_enqueued_offset).toBe(earliest0.at(-1)!.offset);

    // A receive returns whole prefetched batches: what matters is where each starts, and that nothing is skipped.
    expect(result.from_sequence_inclusive.map((e) => e.sequence_number)).toEqual(
      earliest0.slice(1).map((e) => e.sequence_number),
    );
    expect(result.from_offset_exclusive.map((e) => e.sequence_number)).toEqual(
      earliest0.slice(1).map((e) => e.sequence_number),
    );
    expect(result.latest.map((e) => e.body)).toEqual(["latest"]);
  }, 150_000);
});

describe("azure-eventhub (Python) with ManagedIdentityCredential → IMDS simulator + local Event Hubs peer", () => {
  it("puts the simulator's token on $cbs as a JWT, reads the partition ids and sends a keyed batch", async () => {
    const emulator = await peer();
    const simulator = await startSimulator({ scenario: "idle" });
    cleanups.push(() => simulator.close());
    const result = await runPythonJson<{ partition_ids: string[]; sent: number }>(
      "eventhubs_token_client.py",
      [emulator.host, emulator.hubName, emulator.caCertPath!],
      {
        timeoutMs: 90_000,
        env: { AZURE_POD_IDENTITY_AUTHORITY_HOST: simulator.url },
      },
    );
    expect(result).toEqual({ partition_ids: ["0", "1"], sent: 1 });
    expect(emulator.events().map((e) => [e.partitionKey, e.body?.toString("utf8")])).toEqual([
      ["token-key", "sent with a managed-identity token"],
    ]);
  }, 120_000);
});

interface UamqpResult {
  uamqp_version: string;
  hub: { name: string; partition_count: number; partition_ids: string[] };
  keyed_batch: string[];
  single: string[];
  partition1_earliest: Array<{ body: string; sequence_number: number; properties: Record<string, unknown> }>;
  keyed_from_sequence_1: Array<{ body: string; sequence_number: number; partition_key: string }>;
}

describe("uamqp (Python, the C AMQP stack) → local Event Hubs peer", () => {
  it("puts a SAS token on $cbs, reads $management, sends a keyed batch and a message, receives with selector filters", async () => {
    const emulator = await peer();
    const keyedPartition = String(partitionIndexForKey("vm-7", 2));
    const result = await runPythonJson<UamqpResult>(
      "uamqp_client.py",
      [
        emulator.host,
        emulator.hubName,
        "RootManageSharedAccessKey",
        "SAS_KEY_VALUE",
        emulator.caCertPath!,
        keyedPartition,
      ],
      { timeoutMs: 90_000 },
    );
    expect(result.hub).toEqual({
      name: "py-hub",
      type: "com.microsoft:eventhub",
      partition_count: 2,
      partition_ids: ["0", "1"],
    });
    expect(result.keyed_batch).toEqual(["MessageState.SendComplete"]);
    expect(result.single).toEqual(["MessageState.SendComplete"]);
    const keyed = emulator.events().filter((e) => e.partitionKey === "vm-7");
    expect(keyed.map((e) => [e.partitionId, e.body?.toString("utf8")])).toEqual(
      [0, 1, 2].map((i) => [keyedPartition, `u-keyed-${i}`]),
    );
    expect(result.partition1_earliest.map((e) => [e.body, e.properties])).toEqual([
      [keyedPartition === "1" ? "u-keyed-0" : "u-single", keyedPartition === "1" ? {} : { Kind: "single" }],
    ]);
    expect(result.keyed_from_sequence_1.map((e) => [e.body, e.sequence_number, e.partition_key])).toEqual([
      ["u-keyed-1", 1, "vm-7"],
      ["u-keyed-2", 2, "vm-7"],
    ]);
  }, 120_000);
});
