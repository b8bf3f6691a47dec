// `sef fleet` end to end in one process: the real EventHubConsumerClient and BlobCheckpointStore against the local
// Event Hubs peer and Azurite, two instances sharing the partitions, notifications to the local target peers.
import { EventHubProducerClient } from "@azure/event-hubs";
import { BlobServiceClient } from "@azure/storage-blob";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SefRecord } from "../../src/contract/record.js";
import { startFleetService, type FleetService } from "../../src/fleet/fleet-service.js";
import { fleetSettingsSchema } from "../../src/fleet/settings.js";
import { silentLogger } from "../../src/agent/observability/logger.js";
import { startEventHubsEmulator, type EventHubsEmulator } from "../../src/testbed/peers/eventhubs/server.js";
import { startNotifyPeer, type NotifyPeer } from "../../src/testbed/peers/notify/server.js";
import { startAzurite, type Azurite } from "./azurite.js";
import { fleetTransition, vm } from "./records.js";
import { waitFor } from "../helpers/wait.js";
import { metricValue } from "../helpers/metrics.js";
import { partitionIndexForKey } from "../../src/contract/partition-hash.js";

let hub: EventHubsEmulator;
let azurite: Azurite;
let peer: NotifyPeer;
const services: FleetService[] = [];
let producer: EventHubProducerClient;
const routingKey = "R0UT1NGKEY0000000000000000000001";

/** Webhook targets of the rules' test, one per rule (the notify peer tells them apart by path). */
const ruleTargets = ["witness", "ops", "soon", "either"] as const;

const until = <T>(what: string, probe: () => T | undefined | false, timeoutMs = 20_000): Promise<T> =>
  waitFor(what, probe, { timeoutMs, intervalMs: 50 });

function settingsFor() {
  return fleetSettingsSchema.parse({
    eventHubs: {
      consumerGroup: "$Default",
      connection: { connectionString: hub.connectionString, maxRetries: 1, retryDelayMs: 100, tryTimeoutMs: 5000 },
    },
    checkpoints: { connectionStringEnv: "TEST_STORAGE", containerName: "fleet-test" },
    targets: [
      { name: "oncall", type: "pagerduty", url: `${peer.url}/v2/enqueue`, routingKeyEnv: "TEST_PD_KEY" },
      { name: "chat", type: "slack", urlEnv: "TEST_SLACK_URL" },
      { name: "channel", type: "teams", urlEnv: "TEST_TEAMS_URL" },
      { name: "hook", type: "webhook", urlEnv: "TEST_HOOK_URL", hmacSecretEnv: "TEST_HOOK_SECRET" },
      { name: "broken", type: "pagerduty", url: `${peer.url}/v2/enqueue`, routingKeyEnv: "TEST_BAD_KEY" },
      ...ruleTargets.map((name) => ({
        name,
        type: "webhook",
        url: `${peer.url}/hook/${name}`,
        hmacSecretEnv: "TEST_HOOK_SECRET",
      })),
    ],
    rules: [
      {
        name: "impactful",
        eventTypes: ["Reboot", "Redeploy", "Preempt", "Terminate"],
        targets: ["oncall", "chat", "channel", "hook"],
      },
      { name: "freezes", eventTypes: ["Freeze"], targets: ["chat"] },
      { name: "misconfigured", vmNamePatterns: ["db-*"], targets: ["broken"] },
      // The rules' own test (last in this file): VMs named rules-*, each rule to a webhook target of its own.
      { name: "every", vmNamePatterns: ["rules-*"], targets: ["witness"] },
      { name: "ops only", vmNamePatterns: ["rules-*"], resourceGroups: ["RG-OPS"], targets: ["ops"] },
      { name: "at a minute's notice", vmNamePatterns: ["rules-*"], noticeWithinSeconds: 60, targets: ["soon"] },
      { name: "either, now", vmNamePatterns: ["rules-*"], targets: ["either"] },
      {
        name: "either, at a minute's notice",
        vmNamePatterns: ["rules-*"],
        noticeWithinSeconds: 60,
        targets: ["either"],
      },
    ],
    updateIntervalMs: 0,
    tickMs: 200,
    retry: { minDelayMs: 50, maxDelayMs: 400, giveUpAfterMs: 5000 },
    loadBalancing: { updateIntervalMs: 500, ownershipExpirationMs: 3000 },
    metrics: { host: "127.0.0.1", port: 0 },
  });
}

async function send(records: SefRecord[]): Promise<void> {
  const byKey = new Map<string, SefRecord[]>();
  for (const r of records)
    byKey.set(r.RecordType === "Transition" ? r.EventId : r.VmId, [
      ...(byKey.get(r.RecordType === "Transition" ? r.EventId : r.VmId) ?? []),
      r,
    ]);
  for (const [partitionKey, group] of byKey)
    await producer.sendBatch(
      group.map((r) => ({ body: r, contentType: "application/json" })),
      { partitionKey },
    );
}

beforeAll(async () => {
  [hub, azurite, peer] = await Promise.all([
    startEventHubsEmulator({ hubName: "fleet", partitionCount: 4 }),
    startAzurite(),
    startNotifyPeer({ webhookSecret: "hook-secret" }),
  ]);
  const env = {
    TEST_STORAGE: azurite.connectionString,
    TEST_PD_KEY: routingKey,
    TEST_BAD_KEY: "too-short",
    TEST_SLACK_URL: `${peer.url}/slack/services/T000/B000/XXXX`,
    TEST_TEAMS_URL: `${peer.url}/teams/workflows/abc`,
    TEST_HOOK_URL: `${peer.url}/hook/sef`,
    TEST_HOOK_SECRET: "hook-secret",
  };
  for (let i = 0; i < 2; i++)
    services.push(await startFleetService({ settings: settingsFor(), env, logger: silentLogger() }));
  producer = new EventHubProducerClient(hub.connectionString);
}, 150_000);

afterAll(async () => {
  await producer?.close();
  await Promise.all(services.map((s) => s.stop(5000)));
  await Promise.all([hub?.close(), azurite?.stop(), peer?.close()]);
}, 30_000);

describe("sef fleet", () => {
  it("shares the partitions between instances through the Blob checkpoint store", async () => {
    let owned: string[][] = [];
    await until(
      "all 4 partitions owned, each by one instance, both instances owning some",
      () => {
        owned = services.map((s) => s.ownedPartitions());
        return owned.flat().length === 4 && new Set(owned.flat()).size === 4 && owned.every((o) => o.length >= 1);
      },
      50_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}: ${JSON.stringify(owned)}`);
    });
  }, 60_000);

  it("pages once per maintenance event and target, updates as VMs join, resolves when every VM is done", async () => {
    const web = [0, 1, 2, 3, 4].map((i) => vm(i));
    const id = "A1B2C3D4-0000-4000-8000-00000000000A";
    peer.injectFault({ kind: "slack", status: 429, retryAfter: "0", count: 2 });
    await send(web.slice(0, 3).map((v) => fleetTransition(id, "Scheduled", v, web)));
    await until("a PagerDuty trigger", () => peer.requests("pagerduty").some((r) => r.status === 202));
    await until("trigger on every target", () =>
      ["slack", "teams", "webhook"].every((k) =>
        peer.requests(k as "slack").some((r) => r.status >= 200 && r.status < 300),
      ),
    );
    await send(web.slice(3).map((v) => fleetTransition(id, "Scheduled", v, web)));
    await send(web.map((v) => fleetTransition(id, "Started", v, web)));
    await send(web.map((v) => fleetTransition(id, "Completed", v, web)));
    await until("PagerDuty resolve", () => peer.incidents().find((i) => i.dedupKey === id && i.status === "resolved"));

    const ok = (kind: "slack" | "teams" | "webhook" | "pagerduty") =>
      peer.requests(kind).filter((r) => r.status >= 200 && r.status < 300);
    await until("resolves on the chat targets", () =>
      ["slack", "teams", "webhook"].every((k) =>
        ok(k as "slack").some((r) => JSON.stringify(r.body).includes("Resolved")),
      ),
    );
    // One incident for the event, however many VMs reported it.
    expect(peer.incidents().filter((i) => i.dedupKey === id)).toHaveLength(1);
    for (const kind of ["slack", "teams", "webhook"] as const) {
      const bodies = ok(kind).map((r) => JSON.stringify(r.body));
      expect(bodies.filter((b) => !b.includes("Update: ") && !b.includes("Resolved"))).toHaveLength(1); // one trigger
      expect(bodies.filter((b) => b.includes("Resolved"))).toHaveLength(1); // one resolve
    }
    // Slack's 429 with Retry-After: 0 was retried, not hammered and not dead-lettered.
    const slack = peer.requests("slack");
    expect(slack.filter((r) => r.status === 429)).toHaveLength(2);
    expect(slack[2]!.receivedAtMs - slack[0]!.receivedAtMs).toBeGreaterThanOrEqual(90);
    // The generic webhook is signed, and each notification carries its own Idempotency-Key (also in the body).
    const hooks = peer.requests("webhook");
    expect(hooks.every((r) => r.status === 200)).toBe(true);
    const keys = hooks.map((r) => String(r.headers["idempotency-key"]));
    expect(keys.every((k) => /^"[0-9a-f-]{36}"$/.test(k))).toBe(true);
    expect(new Set(keys).size).toBe(hooks.length);
    expect(hooks.map((r) => `"${(r.body as { notificationId: string }).notificationId}"`)).toEqual(keys);
  });

  it("counts and skips what is not a valid record, and dead-letters what a target refuses, with the reason", async () => {
    await producer.sendBatch(
      [{ body: Buffer.from("{not json") }, { body: { RecordType: "Transition", ContractVersion: 9 } }],
      { partitionKey: "junk" },
    );
    const db = [vm(0, "db-vmss")];
    const id = "DEADBEEF-0000-4000-8000-00000000000B";
    await send([fleetTransition(id, "Scheduled", db[0]!, db, { eventType: "Freeze" })]);
    // Each series read per instance: exactly one of them counted each record, once (joined, two instances counting
    // the same record would read as two lines of 1).
    const series: Array<[string, Record<string, string>]> = [
      ["sef_fleet_records_total", { outcome: "malformed-json" }],
      ["sef_fleet_records_total", { outcome: "unknown-version" }],
      ["sef_fleet_notifications_total", { target: "broken", action: "trigger", outcome: "dead_lettered" }],
    ];
    const perInstance = async (): Promise<number[][]> => {
      const texts = await Promise.all(services.map((s) => s.metrics.registry.metrics()));
      return series.map(([name, labels]) => texts.map((text) => metricValue(text, name, labels)));
    };
    const counted = await waitFor(
      "the junk records counted and the refused page dead-lettered",
      async () => {
        const values = await perInstance();
        return values.every((v) => v.reduce((n, k) => n + k, 0) >= 1) && values;
      },
      { timeoutMs: 20_000, intervalMs: 100 },
    );
    for (const values of counted) expect(values.filter((v) => v !== 0)).toEqual([1]);
    // The Freeze went to the chat only (its rule), and the refused page is in the dead-letter container with the reason.
    await until("freeze on slack", () => peer.requests("slack").some((r) => JSON.stringify(r.body).includes("Freeze")));
    const container = BlobServiceClient.fromConnectionString(azurite.connectionString).getContainerClient("fleet-test");
    const names: string[] = [];
    for await (const blob of container.listBlobsFlat({ prefix: "dead-letter/broken/" })) names.push(blob.name);
    expect(names).toEqual([`dead-letter/broken/${id.toLowerCase()}-trigger.json`]);
    const entry = JSON.parse((await container.getBlockBlobClient(names[0]!).downloadToBuffer()).toString());
    expect(entry.reason).toMatch(/HTTP 400.*routing_key/);
    expect(JSON.stringify(entry)).not.toContain("too-short");
  });
});

describe("sef fleet, given records from any holder of the senders' identity", () => {
  /** A metric's value summed over both instances (each counts what its own partitions read). */
  const total = async (series: string): Promise<number> => {
    const texts = await Promise.all(services.map((s) => s.metrics.registry.metrics()));
    const escaped = series.replace(/[{}"]/g, "\\$&");
    return texts
      .map((t) => Number(new RegExp(`^${escaped} (\\d+)$`, "m").exec(t)?.[1] ?? 0))
      .reduce((a, b) => a + b, 0);
  };

  it("skips EventIds named like Object.prototype's members (__proto__, __PROTO__, constructor) on every partition and still pages the real events queued behind them", async () => {
    const forgedIds = ["__proto__", "__PROTO__", "__Proto__", "constructor", "Constructor", "toString"];
    const rogue = vm(9, "rogue-vmss");
    const before = await total('sef_fleet_records_total{outcome="event-id"}');
    // Every partition gets the forged records first (a sender may choose the partition), then the real events.
    for (const partitionId of ["0", "1", "2", "3"])
      await producer.sendBatch(
        forgedIds.map((id) => ({
          body: fleetTransition(id, "Scheduled", rogue, [rogue]),
          contentType: "application/json",
        })),
        { partitionId },
      );
    const web = [0, 1].map((i) => vm(i, "proto-vmss"));
    const real = [1, 2, 3, 4, 5, 6, 7, 8].map((n) => `0bad0000-0000-4000-8000-00000000000${n}`);
    // A real event whose reporter's AgentId is "__proto__": an ordinary key of the fleet's state.
    await send([
      ...real.map((id) => fleetTransition(id, "Scheduled", web[0]!, web)),
      { ...fleetTransition(real[0]!, "Scheduled", web[1]!, web), AgentId: "__proto__" },
    ]);
    await until(
      "a PagerDuty incident for every real event",
      () => real.every((id) => peer.incidents().some((i) => i.dedupKey === id)),
      30_000,
    );
    expect(await total('sef_fleet_records_total{outcome="event-id"}')).toBe(before + 4 * forgedIds.length);
    expect(await total('sef_fleet_records_total{outcome="unfoldable"}')).toBe(0);
  }, 40_000);
  it("drops the Completed records a sender puts on a partition other than its EventId's: the real incident stays open until its VMs end it", async () => {
    const web = [0, 1].map((i) => vm(i, "forged-vmss"));
    const id = "0bad0000-0000-4000-8000-0000000000f1";
    await send(web.map((v) => fleetTransition(id, "Scheduled", v, web)));
    await until("the real incident", () => peer.incidents().find((i) => i.dedupKey === id && i.status === "triggered"));
    const before = await total('sef_fleet_records_total{outcome="wrong-partition"}');
    const home = String(partitionIndexForKey(id, 4));
    const wrong = ["0", "1", "2", "3"].filter((p) => p !== home);
    // The VMs' own Completed records, copied, on every partition but the EventId's own.
    for (const partitionId of wrong)
      await producer.sendBatch(
        web.map((v) => ({ body: fleetTransition(id, "Completed", v, web), contentType: "application/json" })),
        { partitionId },
      );
    const dropped = before + 2 * wrong.length;
    await waitFor(
      "every forged record dropped",
      async () => (await total('sef_fleet_records_total{outcome="wrong-partition"}')) === dropped,
      { timeoutMs: 20_000, intervalMs: 50 },
    );
    expect(peer.incidents().find((i) => i.dedupKey === id)?.status).toBe("triggered");
    await send(web.map((v) => fleetTransition(id, "Completed", v, web)));
    await until("resolved by its own VMs", () =>
      peer.incidents().find((i) => i.dedupKey === id && i.status === "resolved"),
    );
  }, 40_000);
});

describe("sef fleet's rules, as targets see them", () => {
  type Sent = { action: string; event: { eventId: string; status: string } };
  const sentTo = (target: (typeof ruleTargets)[number], eventId: string): Sent[] =>
    peer
      .requests("webhook")
      .filter((r) => r.path === `/hook/${target}` && r.status === 200)
      .map((r) => r.body as Sent)
      .filter((b) => b.event.eventId === eventId);

  it("a resource-group filter passes only that group's VMs; a rule's notice window holds a Scheduled event, never a Started one; a target is notified now when any of its rules allows it", async () => {
    const webVms = [0, 1].map((i) => vm(i, "rules-vmss"));
    const opsVms = [2, 3].map((i) => ({ ...vm(i, "rules-vmss"), resourceGroup: "rg-ops" }));
    const inAnHour = new Date(Date.now() + 3_600_000).toISOString();
    const web = "A1B2C3D4-0000-4000-8000-0000000000C1";
    const ops = "A1B2C3D4-0000-4000-8000-0000000000C2";
    const later = "A1B2C3D4-0000-4000-8000-0000000000C3";
    await send([
      ...webVms.map((v) => fleetTransition(web, "Scheduled", v, webVms)),
      ...opsVms.map((v) => fleetTransition(ops, "Scheduled", v, opsVms)),
    ]);
    await send(webVms.map((v) => fleetTransition(later, "Scheduled", v, webVms, { notBefore: inAnHour })));

    // The group's rule takes the event of its group (names compared case-insensitively) and not the other.
    await until("the ops event at the ops target", () => sentTo("ops", ops).length >= 1);
    await send(webVms.map((v) => fleetTransition(web, "Completed", v, webVms)));
    await until("the web event resolved at the witness (every rule's decision on it taken twice)", () =>
      sentTo("witness", web).some((b) => b.action === "resolve"),
    );
    expect(sentTo("ops", web)).toEqual([]);

    // An hour before NotBefore: the target of a rule allowing it now (the other says not yet) has it at once…
    await until(
      "the later event at the target one of whose rules lets it through",
      () => sentTo("either", later).length >= 1,
    );
    expect(sentTo("either", later).map((b) => [b.action, b.event.status])).toEqual([["trigger", "Scheduled"]]);
    // …the target whose only rule waits for a minute's notice has it once the event starts, NotBefore or not.
    await send(webVms.map((v) => fleetTransition(later, "Started", v, webVms, { notBefore: null })));
    await until("the later event at the notice-window target once Started", () => sentTo("soon", later).length >= 1);
    expect(sentTo("soon", later).map((b) => [b.action, b.event.status])).toEqual([["trigger", "Started"]]);
  });
});
