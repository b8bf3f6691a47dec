// Runs `sef fleet` instances as real child processes (the built CLI) against the local Event Hubs peer, Azurite and the
// notification peer, plays maintenance events from many simulated VMs, kills an instance with SIGKILL on demand, and
// reports what the targets received. Shared by the kill -9 test and the fleet benchmark.
import { spawn, type ChildProcess } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EventHubProducerClient } from "@azure/event-hubs";
import type { TransitionRecord } from "../../src/contract/record.js";
import { startEventHubsEmulator } from "../../src/testbed/peers/eventhubs/server.js";
import { startNotifyPeer, type NotifyPeer } from "../../src/testbed/peers/notify/server.js";
import { fleetCliPath } from "../helpers/agent-process.js";
import { startEventHubsPeerProcess } from "../helpers/eventhubs-peer-process.js";
import { startAzurite } from "./azurite.js";
import { fleetTransition, vm, type VmFixture } from "./records.js";

export interface ClusterOptions {
  readonly instances: number;
  readonly partitions: number;
  readonly ownershipExpirationMs: number;
  /** Other target URLs for some instances (e.g. a receiver that never answers, to hold one instance's claims open). */
  readonly targetsOf?: (index: number) => InstanceTargets | undefined;
  /** The fleet's `bounds` (partition-bounds.ts), when not its defaults. */
  readonly bounds?: Record<string, number>;
  /**
   * The Event Hubs peer as a process of its own (`sef-testbed emulate eventhubs`), as the service is another machine:
   * a bench whose peer carries a flood must not hold up the notification peer's clock on the same event loop.
   */
  readonly hubProcess?: boolean;
  /** How often each partition re-plans (`tickMs`): 500 ms unless set (the service's default is 5 s). */
  readonly tickMs?: number;
}

/** The Event Hubs peer the instances read: only its connection string is shared, whichever way it runs. */
export interface ClusterHub {
  readonly connectionString: string;
  close(): Promise<void>;
}

export interface InstanceTargets {
  readonly pagerDutyUrl: string;
  readonly slackUrl: string;
}

export interface FleetInstance {
  readonly child: ChildProcess;
  /** Base URL of its /metrics, /healthz and /readyz server. */
  readonly metricsUrl: string;
  stdout(): string;
  stderr(): string;
}

export interface Cluster {
  readonly hub: ClusterHub;
  readonly peer: NotifyPeer;
  readonly instances: FleetInstance[];
  send(records: readonly TransitionRecord[]): Promise<void>;
  kill(index: number): void;
  stop(): Promise<void>;
}

const routingKey = "R0UT1NGKEY0000000000000000000001";

export async function startCluster(options: ClusterOptions): Promise<Cluster> {
  const [hub, azurite, peer] = await Promise.all([
    options.hubProcess
      ? startEventHubsPeerProcess("fleet", options.partitions)
      : startEventHubsEmulator({ hubName: "fleet", partitionCount: options.partitions }),
    startAzurite(),
    startNotifyPeer(),
  ]);
  const dir = mkdtempSync(join(tmpdir(), "sef-fleet-"));
  const ownTargets: InstanceTargets = {
    pagerDutyUrl: `${peer.url}/v2/enqueue`,
    slackUrl: `${peer.url}/slack/services/T0/B0/X`,
  };
  const writeConfig = (name: string, targets: InstanceTargets): string => {
    const configPath = join(dir, name);
    writeFileSync(configPath, fleetConfig(targets, options));
    return configPath;
  };
  const sharedConfig = writeConfig("fleet.json", ownTargets);
  const env = {
    ...process.env,
    FLEET_EH: hub.connectionString,
    FLEET_STORAGE: azurite.connectionString,
    FLEET_PD_KEY: routingKey,
  };
  const instances: FleetInstance[] = [];
  for (let i = 0; i < options.instances; i++) {
    const targets = options.targetsOf?.(i);
    const configPath = targets === undefined ? sharedConfig : writeConfig(`fleet-${i}.json`, targets);
    instances.push(await startInstance(configPath, { ...env, FLEET_SLACK_URL: (targets ?? ownTargets).slackUrl }));
  }
  const producer = new EventHubProducerClient(hub.connectionString);
  return {
    hub,
    peer,
    instances,
    send: async (records) => {
      const byKey = new Map<string, TransitionRecord[]>();
      for (const r of records) byKey.set(r.EventId, [...(byKey.get(r.EventId) ?? []), r]);
      await Promise.all(
        [...byKey].map(([partitionKey, group]) =>
          producer.sendBatch(
            group.map((r) => ({ body: r })),
            { partitionKey },
          ),
        ),
      );
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

function fleetConfig(targets: InstanceTargets, options: ClusterOptions): string {
  const { ownershipExpirationMs, bounds = {}, tickMs = 500 } = options;
  return JSON.stringify({
    eventHubs: {
      consumerGroup: "$Default",
      connection: { connectionStringEnv: "FLEET_EH", maxRetries: 2, retryDelayMs: 200, tryTimeoutMs: 10_000 },
    },
    checkpoints: { connectionStringEnv: "FLEET_STORAGE", containerName: "fleet" },
    targets: [
      { name: "oncall", type: "pagerduty", url: targets.pagerDutyUrl, routingKeyEnv: "FLEET_PD_KEY" },
      { name: "chat", type: "slack", urlEnv: "FLEET_SLACK_URL" },
    ],
    rules: [{ name: "all", targets: ["oncall", "chat"] }],
    updateIntervalMs: 60_000,
    tickMs,
    retry: { minDelayMs: 100, maxDelayMs: 2000, giveUpAfterMs: 60_000 },
    loadBalancing: { updateIntervalMs: 1000, ownershipExpirationMs },
    bounds,
    metrics: { host: "127.0.0.1", port: 0 },
    // info logs every notification sent (target, action, EventId): what a repeat's diagnosis needs.
    logLevel: process.env.SEF_BENCH_FLEET_LOG_LEVEL ?? "warn",
  });
}

/**
 * Starts one `sef fleet` and resolves once it says it is ready (with its metrics port). `SEF_BENCH_FLEET_CPU_PROF`
 * names a folder: each instance writes a V8 CPU profile there when it exits (what a bench spends its time on).
 */
async function startInstance(configPath: string, env: NodeJS.ProcessEnv): Promise<FleetInstance> {
  const profileDir = process.env.SEF_BENCH_FLEET_CPU_PROF;
  const profile = profileDir ? ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] : [];
  const child = spawn(process.execPath, [...profile, fleetCliPath, "--config", configPath], {
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let err = "";
  child.stderr!.on("data", (d: Buffer) => (err += d.toString()));
  let out = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  const port = await new Promise<string>((resolve, reject) => {
    child.stdout!.on("data", () => {
      const ready = /sef fleet ready on port (\d+)/.exec(out);
      if (ready) resolve(ready[1]!);
    });
    child.once("exit", (code) => reject(new Error(`sef fleet exited ${code}: ${err}`)));
  });
  return { child, metricsUrl: `http://127.0.0.1:${port}`, stdout: () => out, stderr: () => err };
}

/** `events` maintenance events, each reported by `vmsPerEvent` VMs of a fleet of `fleetSize`. */
export function maintenanceWave(
  events: number,
  vmsPerEvent: number,
  fleetSize: number,
  status: "Scheduled" | "Completed",
  timeMs: number,
): TransitionRecord[] {
  const records: TransitionRecord[] = [];
  for (let e = 0; e < events; e++) {
    const id = `00000000-0000-4000-8000-${String(e).padStart(12, "0")}`;
    const affected: VmFixture[] = Array.from({ length: vmsPerEvent }, (_, i) =>
      vm((e * vmsPerEvent + i) % fleetSize, `vmss-${e % 20}`),
    );
    for (const reporter of affected) records.push(fleetTransition(id, status, reporter, affected, { timeMs }));
  }
  return records;
}

/** What one target's receiver saw, per fleet event: the first message and the end, each ideally exactly once. */
export interface TargetTally {
  /** Events with no trigger (PagerDuty: no incident) / no resolve. */
  readonly triggersMissing: number;
  readonly resolvesMissing: number;
  /** Copies beyond the first of an event's trigger / resolve, as people saw them (PagerDuty: pages, i.e. incidents opened). */
  readonly repeatedTriggers: number;
  readonly repeatedResolves: number;
  /** Raw 2xx HTTP requests, and the trigger / resolve requests beyond one per event (PagerDuty merges these by dedup_key). */
  readonly requests: number;
  readonly repeatedTriggerRequests: number;
  readonly repeatedResolveRequests: number;
  /** Event ids whose trigger / resolve came more than once (as people saw it). */
  readonly repeatedTriggerEvents: readonly string[];
  readonly repeatedResolveEvents: readonly string[];
  /** Event ids whose trigger / resolve request came more than once (raw HTTP). */
  readonly repeatedTriggerRequestEvents: readonly string[];
  readonly repeatedResolveRequestEvents: readonly string[];
}

export interface DeliveryTally {
  readonly events: number;
  /** Incidents opened (pages); a dedup_key that paged twice counts twice. */
  readonly pagerDutyIncidents: number;
  /** Events whose incidents are all resolved. */
  readonly pagerDutyResolved: number;
  /** Events with at least one Slack resolve. */
  readonly slackResolves: number;
  readonly pagerDuty: TargetTally;
  readonly slack: TargetTally;
}

const waveEventId = /00000000-0000-4000-8000-\d{12}/;

function countBy(ids: readonly string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const id of ids) counts.set(id, (counts.get(id) ?? 0) + 1);
  return counts;
}

const beyondOne = (counts: Map<string, number>): number =>
  [...counts.values()].reduce((n, c) => n + Math.max(0, c - 1), 0);
const repeated = (counts: Map<string, number>): string[] =>
  [...counts]
    .filter(([, c]) => c > 1)
    .map(([id]) => id)
    .sort();

/** What the targets got for event ids `0..events-1` of `maintenanceWave`. */
export function tally(peer: NotifyPeer, events: number): DeliveryTally {
  const incidents = peer.incidents().filter((i) => waveEventId.test(i.dedupKey));
  const pdRequests = peer.requests("pagerduty").filter((r) => r.status >= 200 && r.status < 300);
  const pdBodies = pdRequests.map(
    (r) => r.body as { event_action?: string; dedup_key?: string; payload?: { summary?: string } },
  );
  const pdTriggerRequests = countBy(
    pdBodies
      .filter((b) => b.event_action === "trigger" && !b.payload?.summary?.startsWith("Update: "))
      .map((b) => b.dedup_key ?? ""),
  );
  const pdResolveRequests = countBy(pdBodies.filter((b) => b.event_action === "resolve").map((b) => b.dedup_key ?? ""));
  const pages = countBy(incidents.map((i) => i.dedupKey));
  const pdResolvedEvents = new Set(incidents.filter((i) => i.status === "resolved").map((i) => i.dedupKey));
  for (const i of incidents) if (i.status !== "resolved") pdResolvedEvents.delete(i.dedupKey);

  const slack = peer.requests("slack").filter((r) => r.status === 200);
  const slackTriggers: string[] = [];
  const slackResolves: string[] = [];
  for (const r of slack) {
    const text = JSON.stringify(r.body);
    const id = waveEventId.exec(text)?.[0];
    if (!id) continue;
    if (text.includes("Resolved")) slackResolves.push(id);
    else if (!text.includes("Update: ")) slackTriggers.push(id);
  }
  const slackTriggerCounts = countBy(slackTriggers);
  const slackResolveCounts = countBy(slackResolves);
  return {
    events,
    pagerDutyIncidents: incidents.length,
    pagerDutyResolved: pdResolvedEvents.size,
    slackResolves: slackResolveCounts.size,
    pagerDuty: {
      triggersMissing: events - pages.size,
      resolvesMissing: events - pdResolvedEvents.size,
      repeatedTriggers: beyondOne(pages),
      // A resolve for an incident already resolved is dropped by PagerDuty: it closes nothing twice.
      repeatedResolves: 0,
      requests: pdRequests.length,
      repeatedTriggerRequests: beyondOne(pdTriggerRequests),
      repeatedResolveRequests: beyondOne(pdResolveRequests),
      repeatedTriggerEvents: repeated(pages),
      repeatedResolveEvents: [],
      repeatedTriggerRequestEvents: repeated(pdTriggerRequests),
      repeatedResolveRequestEvents: repeated(pdResolveRequests),
    },
    slack: {
      triggersMissing: events - slackTriggerCounts.size,
      resolvesMissing: events - slackResolveCounts.size,
      repeatedTriggers: beyondOne(slackTriggerCounts),
      repeatedResolves: beyondOne(slackResolveCounts),
      requests: slack.length,
      repeatedTriggerRequests: beyondOne(slackTriggerCounts),
      repeatedResolveRequests: beyondOne(slackResolveCounts),
      repeatedTriggerEvents: repeated(slackTriggerCounts),
      repeatedResolveEvents: repeated(slackResolveCounts),
      repeatedTriggerRequestEvents: repeated(slackTriggerCounts),
      repeatedResolveRequestEvents: repeated(slackResolveCounts),
    },
  };
}

/** A notification a surviving instance re-sent from a claim left by a stopped one (from its warn log lines). */
export interface InDoubtResend {
  readonly target: string;
  readonly action: string;
  readonly eventId: string;
  readonly cause: "claim_taken_over" | "attempt_unanswered";
}

/**
 * The in-doubt re-sends the instances logged: claims taken over ("re-sending a claim left by an instance that stopped
 * mid-send") and attempts after one left unanswered ("... whose unanswered attempt may have reached the target").
 */
export function inDoubtResends(cluster: Cluster): InDoubtResend[] {
  const found: InDoubtResend[] = [];
  for (const instance of cluster.instances) {
    for (const line of instance.stderr().split("\n")) {
      if (
        !line.includes("re-sending a claim left by an instance") &&
        !line.includes("unanswered attempt may have reached the target")
      )
        continue;
      try {
        const entry = JSON.parse(line) as { target: string; action: string; eventId: string };
        const cause = line.includes("re-sending a claim left by an instance")
          ? "claim_taken_over"
          : "attempt_unanswered";
        found.push({ target: entry.target, action: entry.action, eventId: entry.eventId, cause });
      } catch {
        // not a JSON log line
      }
    }
  }
  return found;
}

/** A target that reads each request and never answers: whoever sends to it keeps its claim pending. */
export interface SilentReceiver {
  readonly url: string;
  /** What arrived: the path and the parsed JSON body. */
  readonly received: ReadonlyArray<{ readonly path: string; readonly body: unknown }>;
  close(): Promise<void>;
}

export async function startSilentReceiver(): Promise<SilentReceiver> {
  const received: Array<{ path: string; body: unknown }> = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () =>
      received.push({
        path: req.url ?? "/",
        body: JSON.parse(Buffer.concat(chunks).toString("utf8") || "null") as unknown,
      }),
    );
    res.on("error", () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** One instance's `sef_fleet_notifications_in_doubt_total` for `cause`, summed over targets and actions. */
export async function inDoubtCounted(instance: FleetInstance, cause: InDoubtResend["cause"]): Promise<number> {
  const text = await (await fetch(`${instance.metricsUrl}/metrics`, { signal: AbortSignal.timeout(5000) })).text();
  let total = 0;
  for (const line of text.split("\n")) {
    const match = /^sef_fleet_notifications_in_doubt_total\{([^}]*)\} (\d+)$/.exec(line);
    if (match && match[1]!.includes(`cause="${cause}"`)) total += Number(match[2]);
  }
  return total;
}
