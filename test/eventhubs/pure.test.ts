// Pure logic of the Event Hubs sink and peer: selectors, store, $cbs checks, encoding, classification, settings.
import { describe, expect, it } from "vitest";
import { createHmac } from "node:crypto";
import { MessagingError } from "@azure/event-hubs";
import { parseSelector, startIndex } from "../../src/testbed/peers/eventhubs/selector.js";
import { HubStore } from "../../src/testbed/peers/eventhubs/store.js";
import { checkPutToken } from "../../src/testbed/peers/eventhubs/cbs-auth.js";
import { mintLocalToken } from "../../src/testbed/peers/local-tokens.js";
import {
  groupByPartitionKey,
  partitionForKey,
  partitionKeyOf,
  toEventData,
} from "../../src/agent/sinks/eventhubs/encode.js";
import { classifySendError } from "../../src/agent/sinks/eventhubs/classify.js";
import { eventHubsSettingsSchema, resolveEventHubsAuth } from "../../src/agent/sinks/eventhubs/settings.js";
import { eventHubsConnectionSchema } from "../../src/fleet/eventhubs-source.js";
import { entries, heartbeat, interleavedTransitions, transition } from "./fixtures.js";

function messagingError(code: string, message = "boom"): MessagingError {
  const err = new MessagingError(message);
  err.code = code;
  return err;
}

function sas(audience: string, key: string, expirySeconds: number): string {
  const sr = encodeURIComponent(audience);
  const sig = encodeURIComponent(createHmac("sha256", key).update(`${sr}\n${expirySeconds}`).digest("base64"));
  return `SharedAccessSignature sr=${sr}&sig=${sig}&se=${expirySeconds}&skn=Root`;
}

describe("peer: selectors and store", () => {
  const store = new HubStore(1, () => 1000);
  store.append("0", "k", [Buffer.alloc(10), Buffer.alloc(20), Buffer.alloc(30)]);
  const events = store.events("0");

  it("assigns sequence numbers and byte offsets, and the same key to the same partition", () => {
    expect(events.map((e) => [e.sequenceNumber, e.offset])).toEqual([
      [0, "0"],
      [1, "10"],
      [2, "30"],
    ]);
    const four = new HubStore(4);
    expect(four.assignPartition("EV-1")).toBe(four.assignPartition("EV-1"));
    expect(store.info("0")).toMatchObject({
      beginSequenceNumber: 0,
      lastEnqueuedSequenceNumber: 2,
      lastEnqueuedOffset: "30",
      isEmpty: false,
    });
  });

  it.each([
    ["amqp.annotation.x-opt-offset > '-1'", 0],
    ["amqp.annotation.x-opt-offset > '@latest'", 3],
    ["amqp.annotation.x-opt-offset > '10'", 2],
    ["amqp.annotation.x-opt-offset >= '10'", 1],
    ["amqp.annotation.x-opt-sequence-number > '0'", 1],
    ["amqp.annotation.x-opt-sequence-number >= '2'", 2],
    ["amqp.annotation.x-opt-enqueued-time > '999'", 0],
    ["amqp.annotation.x-opt-enqueued-time > '1000'", 3],
  ])("%s starts at index %i", (filter, index) => {
    expect(startIndex(parseSelector(filter), events)).toBe(index);
  });

  it("rejects selectors it does not understand", () => {
    expect(() => parseSelector("amqp.annotation.x-opt-foo > '1'")).toThrow(/unsupported selector/);
  });
});

describe("peer: $cbs put-token", () => {
  const nowMs = Date.now();
  const options = { hubName: "hub", sharedAccessKey: "k3y", nowMs };

  it("accepts a local JWT for https://eventhubs.azure.net naming this hub, refuses other audiences or hubs", () => {
    const good = mintLocalToken("https://eventhubs.azure.net/.default", { nowMs }).token;
    expect(checkPutToken({ name: "sb://localhost/hub", type: "jwt", token: good }, options)).toEqual({
      ok: true,
      entityPath: "hub",
    });
    const wrongAudience = mintLocalToken("https://storage.azure.com", { nowMs }).token;
    expect(checkPutToken({ name: "sb://localhost/hub", type: "jwt", token: wrongAudience }, options)).toMatchObject({
      ok: false,
    });
    expect(checkPutToken({ name: "sb://localhost/other", type: "jwt", token: good }, options)).toMatchObject({
      ok: false,
      reason: expect.stringContaining("hub"),
    });
  });

  it("verifies SAS tokens: resource, expiry and signature; reasons never quote the token", () => {
    const expiry = Math.floor(nowMs / 1000) + 600;
    const good = sas("sb://localhost:5672/hub", "k3y", expiry);
    expect(
      checkPutToken(
        { name: "sb://localhost:5672/hub/Partitions/0", type: "servicebus.windows.net:sastoken", token: good },
        options,
      ),
    ).toMatchObject({ ok: true });
    const forged = sas("sb://localhost:5672/hub", "wrong", expiry);
    const refused = checkPutToken(
      { name: "sb://localhost:5672/hub", type: "servicebus.windows.net:sastoken", token: forged },
      options,
    );
    expect(refused).toEqual({ ok: false, reason: "SAS token signature is invalid" });
    const expired = sas("sb://localhost:5672/hub", "k3y", Math.floor(nowMs / 1000) - 1);
    expect(
      checkPutToken(
        { name: "sb://localhost:5672/hub", type: "servicebus.windows.net:sastoken", token: expired },
        options,
      ),
    ).toMatchObject({ ok: false, reason: "SAS token has expired" });
    expect(
      checkPutToken(
        { name: "sb://localhost:5672/hub", type: "servicebus.windows.net:sastoken", token: "garbage" },
        options,
      ),
    ).toMatchObject({ ok: false });
  });
});

describe("sink: encoding", () => {
  it("maps a record to an event with the filterable properties", () => {
    const [entry] = entries([transition("EV-1", "Started", 0)]);
    const event = toEventData(entry!);
    expect(event.messageId).toBe(entry!.record.RecordId);
    expect(event.contentType).toBe("application/json");
    expect((event.body as Buffer).toString()).toBe(entry!.json);
    expect(event.properties).toEqual({
      RecordType: "Transition",
      EventStatus: "Started",
      EventType: "Reboot",
      VmId: entry!.record.VmId,
    });
  });

  it("uses EventId, falls back to VmId for heartbeats, and honours none", () => {
    expect(partitionKeyOf(transition("EV-1", "Scheduled", 0), "EventId")).toBe("EV-1");
    expect(partitionKeyOf(heartbeat(0), "EventId")).toBe(heartbeat(0).VmId);
    expect(partitionKeyOf(transition("EV-1", "Scheduled", 0), "none")).toBeUndefined();
  });

  it("groups by key in order of first appearance", () => {
    const batch = entries([
      transition("A", "Scheduled", 0),
      transition("B", "Scheduled", 1),
      transition("A", "Started", 2),
    ]);
    expect(groupByPartitionKey(batch, "EventId").map((g) => [g.partitionKey, g.indexes])).toEqual([
      ["A", [0, 2]],
      ["B", [1]],
    ]);
  });
});

describe("sink: classification", () => {
  it.each([
    ["ServerBusyError", "retry"],
    ["OperationTimeoutError", "retry"],
    ["DetachForcedError", "retry"],
    ["UnauthorizedError", "retry"],
    ["MessageTooLargeError", "rejected"],
    ["QuotaExceededError", "rejected"],
  ])("%s → %s", (code, kind) => {
    expect(classifySendError(messagingError(code)).kind).toBe(kind);
  });

  it("decides on the last error of the SDK's AggregateError and redacts secrets", () => {
    const err = new AggregateError([
      messagingError("ServerBusyError"),
      messagingError("MessageTooLargeError", "too big, SharedAccessKey=abc123"),
    ]);
    const c = classifySendError(err);
    expect(c.kind).toBe("rejected");
    expect(c.reason).not.toContain("abc123");
    expect(classifySendError(new Error("socket hang up")).kind).toBe("retry");
  });
});

describe("sink: settings", () => {
  it("has documented defaults", () => {
    expect(eventHubsSettingsSchema.parse({})).toEqual({
      connectionStringEnv: "SEF_EVENTHUBS_CONNECTION_STRING",
      credential: "managedIdentity",
      partitionKeyField: "EventId",
      partitionRouting: "key",
      maxBatchRecords: 2000,
      lingerMs: 100,
      maxConcurrentBatches: 128,
      maxRetries: 3,
      retryDelayMs: 800,
      maxRetryDelayMs: 10_000,
      tryTimeoutMs: 30_000,
      idleCloseMs: 30_000,
    });
  });

  it("resolves credentials: namespace → Entra ID, else config, else the environment; errors quote no secret", () => {
    const ns = eventHubsSettingsSchema.parse({
      fullyQualifiedNamespace: "x.servicebus.windows.net",
      eventHubName: "h",
      managedIdentityClientId: "cid",
    });
    expect(resolveEventHubsAuth(ns, {})).toMatchObject({
      kind: "tokenCredential",
      credential: "managedIdentity",
      managedIdentityClientId: "cid",
    });
    const env = resolveEventHubsAuth(eventHubsSettingsSchema.parse({}), {
      SEF_EVENTHUBS_CONNECTION_STRING: "Endpoint=sb://x/;SharedAccessKeyName=n;SharedAccessKey=s",
    });
    expect(env).toMatchObject({
      kind: "connectionString",
      source: "environment variable SEF_EVENTHUBS_CONNECTION_STRING",
    });
    expect(() => resolveEventHubsAuth(eventHubsSettingsSchema.parse({}), {})).toThrow(
      /SEF_EVENTHUBS_CONNECTION_STRING/,
    );
    expect(() => eventHubsSettingsSchema.parse({ fullyQualifiedNamespace: "x" })).toThrow(/eventHubName/);
    expect(() =>
      eventHubsSettingsSchema.parse({ fullyQualifiedNamespace: "x", eventHubName: "h", connectionString: "c" }),
    ).toThrow(/either/);
  });

  it("refuses the connections the fleet refuses, with the same issues (the contract's connection rules)", () => {
    const issuesOf = (schema: typeof eventHubsConnectionSchema | typeof eventHubsSettingsSchema, input: object) => {
      const result = schema.safeParse(input);
      return result.success ? [] : result.error.issues.map(({ message, path }) => ({ message, path }));
    };
    const cases = [
      { fullyQualifiedNamespace: "x.servicebus.windows.net" },
      { fullyQualifiedNamespace: "x.servicebus.windows.net", eventHubName: "h", connectionString: "c" },
      { fullyQualifiedNamespace: "x.servicebus.windows.net", eventHubName: "h" },
      { connectionString: "c" },
    ];
    expect(cases.map((input) => issuesOf(eventHubsSettingsSchema, input))).toEqual([
      [{ message: "eventHubName is required with fullyQualifiedNamespace", path: ["eventHubName"] }],
      [{ message: "set either connectionString or fullyQualifiedNamespace, not both", path: [] }],
      [],
      [],
    ]);
    expect(cases.map((input) => issuesOf(eventHubsConnectionSchema, input))).toEqual(
      cases.map((input) => issuesOf(eventHubsSettingsSchema, input)),
    );
    expect(eventHubsConnectionSchema.parse({}).connectionStringEnv).toBe("SEF_EVENTHUBS_CONNECTION_STRING");
  });
});

describe("hash routing", () => {
  it("routes a key to a fixed partition and spreads keys over all of them", () => {
    const ids = ["0", "1", "2", "3"];
    const used = new Set(Array.from({ length: 200 }, (_, i) => partitionForKey(`EV-${i}`, ids)));
    expect(used).toEqual(new Set(ids));
    expect(partitionForKey("EV-7", ids)).toBe(partitionForKey("EV-7", ids));
  });

  it("groups a send per partition, keeping outbox order inside each group", () => {
    const records = interleavedTransitions(6);
    const ids = ["0", "1"];
    const groups = groupByPartitionKey(entries(records), "EventId", ids);
    expect(groups.every((g) => g.partitionKey === undefined && ids.includes(g.partitionId!))).toBe(true);
    expect(groups.flatMap((g) => g.indexes).sort((a, b) => a - b)).toEqual(records.map((_, i) => i));
    for (const g of groups) expect(g.indexes).toEqual([...g.indexes].sort((a, b) => a - b));
    for (const g of groups)
      for (const i of g.indexes) expect(partitionForKey(records[i]!.EventId, ids)).toBe(g.partitionId);
  });
});
