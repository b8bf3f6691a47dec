// The local Event Hubs peer behaves like the service where Microsoft's clients depend on it: full-length performatives,
// addresses with an `amqps://host/` prefix, binary put-token fields, consumer groups that must exist, size limits per tier.
import { createHmac } from "node:crypto";
import { createRequire } from "node:module";
import { afterEach, describe, expect, it } from "vitest";
import { EventHubConsumerClient, EventHubProducerClient, earliestEventPosition } from "@azure/event-hubs";
import { parseNodeAddress } from "../../src/testbed/peers/eventhubs/addresses.js";
import { checkPutToken } from "../../src/testbed/peers/eventhubs/cbs-auth.js";
import { installFullLengthPerformatives } from "../../src/testbed/peers/eventhubs/full-performatives.js";
import {
  maxMessageSizeByTier,
  startEventHubsEmulator,
  type EventHubsEmulator,
} from "../../src/testbed/peers/eventhubs/server.js";

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function peer(
  options: { consumerGroups?: string[]; tier?: "basic" | "standard" } = {},
): Promise<EventHubsEmulator> {
  const emulator = await startEventHubsEmulator({ hubName: "conform", partitionCount: 1, ...options });
  cleanups.push(() => emulator.close());
  return emulator;
}

interface RheaFrames {
  begin(fields: Record<string, unknown>): unknown;
  attach(fields: Record<string, unknown>): unknown;
  amqp_frame(channel: number, performative: unknown): unknown;
  write_frame(frame: unknown): Buffer;
}

/** Field count of the list an encoded AMQP frame's performative carries (list8 or list32). */
function performativeFieldCount(frame: Buffer): number {
  const body = frame.subarray(8); // size, doff, type, channel
  expect(body[0]).toBe(0x00); // described
  const listAt = body[1] === 0x53 ? 3 : 10; // smallulong or ulong descriptor
  const constructor = body[listAt];
  if (constructor === 0x45) return 0;
  return constructor === 0xc0 ? body[listAt + 2]! : body.readUInt32BE(listAt + 5);
}

describe("peer: AMQP performatives as the service writes them", () => {
  it("writes BEGIN and ATTACH with all fields, handle-max and properties set (clients read them by position)", () => {
    installFullLengthPerformatives();
    const frames = createRequire(import.meta.url)("rhea/lib/frames.js") as RheaFrames;
    const begin = frames.write_frame(
      frames.amqp_frame(0, frames.begin({ next_outgoing_id: 0, incoming_window: 10, outgoing_window: 10 })),
    );
    expect(performativeFieldCount(begin)).toBe(8);
    expect(begin.includes(Buffer.from([0x70, 0xff, 0xff, 0xff, 0xff]))).toBe(true); // handle-max: uint 4294967295
    const attach = frames.write_frame(frames.amqp_frame(0, frames.attach({ name: "l", handle: 0, role: false })));
    expect(performativeFieldCount(attach)).toBe(14);
  });
});

describe("peer: link addresses", () => {
  it("knows $cbs, $management, the hub, partitions and consumer groups, with or without an amqps://host/ prefix", () => {
    expect(parseNodeAddress("$cbs", "Hub")).toEqual({ kind: "cbs" });
    expect(parseNodeAddress("$management", "Hub")).toEqual({ kind: "management" });
    expect(parseNodeAddress("amqps://ns.example:5671/hub", "Hub")).toEqual({
      kind: "hub",
      entityPath: "hub",
      partitionId: undefined,
    });
    expect(parseNodeAddress("amqps://127.0.0.2/Hub/Partitions/1", "Hub")).toEqual({
      kind: "hub",
      entityPath: "Hub/Partitions/1",
      partitionId: "1",
    });
    expect(parseNodeAddress("amqps://h/hub/ConsumerGroups/$Default/Partitions/0", "hub")).toEqual({
      kind: "consumer",
      entityPath: "hub/ConsumerGroups/$Default/Partitions/0",
      consumerGroup: "$Default",
      partitionId: "0",
    });
    expect(parseNodeAddress("other/Partitions/0", "hub").kind).toBe("unknown");
    expect(parseNodeAddress("hub/Partitions", "hub").kind).toBe("unknown");
  });
});

describe("peer: put-token fields as Microsoft's clients send them", () => {
  const nowMs = Date.now();
  const sas = (resource: string, key: string, expiry: number): string => {
    const sr = encodeURIComponent(resource);
    const sig = encodeURIComponent(createHmac("sha256", key).update(`${sr}\n${expiry}`).digest("base64"));
    return `SharedAccessSignature sr=${sr}&sig=${sig}&se=${expiry}&skn=RootManageSharedAccessKey`;
  };
  const token = sas("sb://127.0.0.2:5671/hub", "k3y", Math.floor(nowMs / 1000) + 600);
  const options = { hubName: "hub", sharedAccessKey: "k3y", nowMs };

  it("accepts the type as binary, and a SAS token put with type jwt (azure-eventhub 5.11's pure-Python client does)", () => {
    const binaryType = Buffer.from("servicebus.windows.net:sastoken");
    expect(checkPutToken({ name: "sb://127.0.0.2:5671/hub", type: binaryType, token }, options)).toEqual({
      ok: true,
      entityPath: "hub",
    });
    expect(checkPutToken({ name: "sb://127.0.0.2:5671/hub", type: "jwt", token: Buffer.from(token) }, options)).toEqual(
      { ok: true, entityPath: "hub" },
    );
    expect(checkPutToken({ name: "sb://127.0.0.2:5671/hub", type: "basic", token }, options)).toMatchObject({
      ok: false,
      reason: expect.stringContaining("unsupported token type"),
    });
  });
});

describe("peer: consumer groups and size limits", () => {
  async function firstReceiveError(emulator: EventHubsEmulator, consumerGroup: string): Promise<string | undefined> {
    const consumer = new EventHubConsumerClient(consumerGroup, emulator.connectionString);
    cleanups.push(() => consumer.close());
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(undefined), 1500);
      const subscription = consumer.subscribe(
        "0",
        {
          processEvents: async () => undefined,
          processError: async (err) => {
            clearTimeout(timer);
            await subscription.close();
            resolve((err as { code?: string }).code ?? err.name);
          },
        },
        { startPosition: earliestEventPosition, maxWaitTimeInSeconds: 0.2 },
      );
    });
  }

  it("refuses receivers on a consumer group that was never created, serves the configured ones", async () => {
    const emulator = await peer({ consumerGroups: ["$Default", "analytics"] });
    expect(await firstReceiveError(emulator, "missing")).toBe("MessagingEntityNotFoundError");
    expect(await firstReceiveError(emulator, "analytics")).toBeUndefined();
    expect(await firstReceiveError(emulator, "$default")).toBeUndefined();
  });

  it("takes the message size limit from the tier: a Basic namespace refuses an event over 256 KiB", async () => {
    const emulator = await peer({ tier: "basic" });
    expect(emulator.maxMessageSize).toBe(maxMessageSizeByTier.basic);
    const producer = new EventHubProducerClient(emulator.connectionString);
    cleanups.push(() => producer.close());
    const batch = await producer.createBatch();
    expect(batch.maxSizeInBytes).toBe(256 * 1024);
    expect(batch.tryAdd({ body: Buffer.alloc(300 * 1024) })).toBe(false);
    await producer.sendBatch([{ body: Buffer.alloc(200 * 1024) }]);
    await expect(producer.sendBatch([{ body: Buffer.alloc(300 * 1024) }])).rejects.toThrow(/size|exceed/i);
    expect(emulator.stats.sendsRejected).toBeGreaterThanOrEqual(1);
    expect(emulator.events()).toHaveLength(1);
  });
});

describe("peer: every send gets its own outcome", () => {
  // Sends on one link whose transfers arrive together: rhea would merge a reject and the accepts after it into one
  // disposition range (the peer settles them apart, as the service does). Each client must hear exactly what the hub did.
  const plans: ReadonlyArray<ReadonlyArray<"ok" | "server-busy">> = [
    ["ok", "server-busy", "ok", "ok"],
    ["server-busy", "ok", "ok", "ok"],
    ["ok", "ok", "ok", "server-busy"],
    ["ok", "server-busy", "server-busy", "ok"],
    ["server-busy", "ok", "server-busy", "ok"],
  ];
  it.each(plans)(
    "plan %s,%s,%s,%s: a send is told it succeeded exactly when the hub stored its event",
    async (...plan) => {
      const emulator = await startEventHubsEmulator({ hubName: "conform", partitionCount: 2 });
      cleanups.push(() => emulator.close());
      const producer = new EventHubProducerClient(emulator.connectionString, { retryOptions: { maxRetries: 0 } });
      cleanups.push(() => producer.close());
      await producer.getPartitionIds(); // the link is open: the four transfers below go out together
      emulator.faults.planSends(plan);
      const keys = ["k0", "k1", "k2", "k3"];
      const results = await Promise.allSettled(
        keys.map((key) => producer.sendBatch([{ body: key, messageId: key }], { partitionKey: key })),
      );
      const told = keys.filter((_, i) => results[i]!.status === "fulfilled").sort();
      const stored = emulator
        .events()
        .map((e) => String(e.messageId))
        .sort();
      expect(told).toEqual(stored);
      expect(stored).toHaveLength(plan.filter((p) => p === "ok").length);
    },
  );

  it("an event over the size limit among accepted ones is refused alone", async () => {
    const emulator = await startEventHubsEmulator({ hubName: "conform", partitionCount: 1, tier: "basic" });
    cleanups.push(() => emulator.close());
    const producer = new EventHubProducerClient(emulator.connectionString, { retryOptions: { maxRetries: 0 } });
    cleanups.push(() => producer.close());
    await producer.getPartitionIds();
    const sizes = [10, 300 * 1024, 10, 10];
    const results = await Promise.allSettled(
      sizes.map((size, i) => producer.sendBatch([{ body: Buffer.alloc(size), messageId: `m${i}` }])),
    );
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled", "fulfilled"]);
    expect(
      emulator
        .events()
        .map((e) => e.messageId)
        .sort(),
    ).toEqual(["m0", "m2", "m3"]);
  });
});
