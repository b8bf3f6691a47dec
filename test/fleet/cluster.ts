// Runs `sef fleet` instances as real child processes (the built CLI) against the local Event Hubs peer, Azurite and the
// notification peer, plays maintenance events from many simulated VMs, kills an instance with SIGKILL on demand, and
// reports what the targets received. Shared by the kill -9 test and the fleet benchmark.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EventHubProducerClient } from "@azure/event-hubs";
import type { TransitionRecord } from "../../src/contract/record.js";
import { startEventHubsEmulator, type EventHubsEmulator } from "../../src/testbed/peers/eventhubs/server.js";
import { startNotifyPeer, type NotifyPeer } from "../../src/testbed/peers/notify/server.js";
import { cliPath } from "../helpers/agent-process.js";
import { startAzurite } from "./azurite.js";
import { fleetTransition, vm, type VmFixture } from "./records.js";

export interface ClusterOptions {
  readonly instances: number;
  readonly partitions: number;
  readonly ownershipExpirationMs: number;
}

export interface FleetInstance {
  readonly child: ChildProcess;
  stdout(): string;
  stderr(): string;
}

export interface Cluster {
  readonly hub: EventHubsEmulator;
  readonly peer: NotifyPeer;
  readonly instances: FleetInstance[];
  send(records: readonly TransitionRecord[]): Promise<void>;
  kill(index: number): void;
  stop(): Promise<void>;
}

const routingKey = "R0UT1NGKEY0000000000000000000001";

export async function startCluster(options: ClusterOptions): Promise<Cluster> {
  const [hub, azurite, peer] = await Promise.all([
    startEventHubsEmulator({ hubName: "fleet", partitionCount: options.partitions }),
    startAzurite(),
    startNotifyPeer(),
  ]);
  const dir = mkdtempSync(join(tmpdir(), "sef-fleet-"));
  const configPath = join(dir, "fleet.json");
  writeFileSync(
    configPath,
    JSON.stringify({
      eventHubs: { consumerGroup: "$Default", connection: { connectionStringEnv: "FLEET_EH", maxRetries: 2, retryDelayMs: 200, tryTimeoutMs: 10_000 } },
      checkpoints: { connectionStringEnv: "FLEET_STORAGE", containerName: "fleet" },
      targets: [
        { name: "oncall", type: "pagerduty", url: `${peer.url}/v2/enqueue`, routingKeyEnv: "FLEET_PD_KEY" },
        { name: "chat", type: "slack", urlEnv: "FLEET_SLACK_URL" },
      ],
      rules: [{ name: "all", targets: ["oncall", "chat"] }],
      updateIntervalMs: 60_000,
      tickMs: 500,
      retry: { minDelayMs: 100, maxDelayMs: 2000, giveUpAfterMs: 60_000 },
      loadBalancing: { updateIntervalMs: 1000, ownershipExpirationMs: options.ownershipExpirationMs },
      metrics: { host: "127.0.0.1", port: 0 },
      logLevel: "warn",
    }),
  );
  const env = {
    ...process.env,
    FLEET_EH: hub.connectionString,
    FLEET_STORAGE: azurite.connectionString,
    FLEET_PD_KEY: routingKey,
    FLEET_SLACK_URL: `${peer.url}/slack/services/T0/B0/X`,
  };
  const instances: FleetInstance[] = [];
  for (let i = 0; i < options.instances; i++) {
    const child = spawn(process.execPath, [cliPath, "fleet", "--config", configPath], { env, stdio: ["ignore", "pipe", "pipe"] });
    let err = "";
    child.stderr!.on("data", (d: Buffer) => (err += d.toString()));
    let out = "";
    child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on("data", () => {
        if (out.includes("sef fleet ready")) resolve();
      });
      child.once("exit", (code) => reject(new Error(`sef fleet exited ${code}: ${err}`)));
    });
    instances.push({ child, stdout: () => out, stderr: () => err });
  }
  const producer = new EventHubProducerClient(hub.connectionString);
  return {
    hub,
    peer,
    instances,
    send: async (records) => {
      const byKey = new Map<string, TransitionRecord[]>();
      for (const r of records) byKey.set(r.EventId, [...(byKey.get(r.EventId) ?? []), r]);
      await Promise.all([...byKey].map(([partitionKey, group]) => producer.sendBatch(group.map((r) => ({ body: r })), { partitionKey })));
    },
    kill: (index) => instances[index]!.child.kill("SIGKILL"),
    stop: async () => {
      await producer.close();
      await Promise.all(
        instances.map(async ({ child }) => {
          if (child.exitCode !== null || child.signalCode !== null) return;
          child.kill("SIGTERM");
          const exited = new Promise((r) => child.once("exit", r));
          const timer = setTimeout(() => child.kill("SIGKILL"), 12_000);
          await exited;
          clearTimeout(timer);
        }),
      );
      await Promise.all([hub.close(), azurite.stop(), peer.close()]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** `events` maintenance events, each reported by `vmsPerEvent` VMs of a fleet of `fleetSize`. */
export function maintenanceWave(events: number, vmsPerEvent: number, fleetSize: number, status: "Scheduled" | "Completed", timeMs: number): TransitionRecord[] {
  const records: TransitionRecord[] = [];
  for (let e = 0; e < events; e++) {
    const id = `00000000-0000-4000-8000-${String(e).padStart(12, "0")}`;
    const affected: VmFixture[] = Array.from({ length: vmsPerEvent }, (_, i) => vm((e * vmsPerEvent + i) % fleetSize, `vmss-${e % 20}`));
    for (const reporter of affected) records.push(fleetTransition(id, status, reporter, affected, { timeMs }));
  }
  return records;
}

export interface DeliveryTally {
  readonly events: number;
  readonly pagerDutyIncidents: number;
  readonly pagerDutyResolved: number;
  readonly pagerDutyRepeatTriggers: number;
  readonly slackTriggersMissing: number;
  readonly slackTriggerDuplicates: number;
  readonly slackResolves: number;
}

/** What the targets got for event ids `0..events-1` of `maintenanceWave`. */
export function tally(peer: NotifyPeer, events: number): DeliveryTally {
  const incidents = peer.incidents();
  const slack = peer.requests("slack").filter((r) => r.status === 200);
  const triggers = new Map<string, number>();
  let resolves = 0;
  for (const r of slack) {
    const text = JSON.stringify(r.body);
    const id = /00000000-0000-4000-8000-\d{12}/.exec(text)?.[0];
    if (!id) continue;
    if (text.includes("Resolved")) resolves++;
    else if (!text.includes("Update: ")) triggers.set(id, (triggers.get(id) ?? 0) + 1);
  }
  return {
    events,
    pagerDutyIncidents: incidents.length,
    pagerDutyResolved: incidents.filter((i) => i.status === "resolved").length,
    pagerDutyRepeatTriggers: incidents.reduce((n, i) => n + i.triggers - 1, 0),
    slackTriggersMissing: events - triggers.size,
    slackTriggerDuplicates: [...triggers.values()].reduce((n, c) => n + c - 1, 0),
    slackResolves: resolves,
  };
}
