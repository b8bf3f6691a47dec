// The Event Hubs sink holds its AMQP connection only while it sends: closed after idleCloseMs, reopened by the next
// record (heartbeats included), nothing lost; the local peer counts the TCP connections, the agent's metrics agree.
import { afterEach, describe, expect, it } from "vitest";
import { silentLogger } from "../../src/agent/observability/logger.js";
import { AgentMetrics } from "../../src/agent/observability/metrics.js";
import {
  createEventHubsSink,
  eventHubsSettingsSchema,
  type EventHubsSink,
} from "../../src/agent/sinks/eventhubs/index.js";
import { startEventHubsEmulator, type EventHubsEmulator } from "../../src/testbed/peers/eventhubs/server.js";
import { entries, heartbeat, transition } from "./fixtures.js";
import { waitUntil } from "../helpers/wait.js";

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function peer(): Promise<EventHubsEmulator> {
  const emulator = await startEventHubsEmulator({ hubName: "sef-records", partitionCount: 2 });
  cleanups.push(() => emulator.close());
  return emulator;
}

function sink(emulator: EventHubsEmulator, idleCloseMs: number, metrics?: AgentMetrics): EventHubsSink {
  const settings = eventHubsSettingsSchema.parse({
    connectionString: emulator.connectionString,
    maxRetries: 0,
    retryDelayMs: 50,
    tryTimeoutMs: 5000,
    idleCloseMs,
  });
  const s = createEventHubsSink(settings, { logger: silentLogger(), ...(metrics ? { metrics } : {}) }, {});
  cleanups.push(() => s.close());
  return s;
}

const until = (condition: () => boolean, what: string, timeoutMs = 5000): Promise<void> =>
  waitUntil(condition, timeoutMs, what);

async function metricValues(metrics: AgentMetrics): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const metric of await metrics.registry.getMetricsAsJSON()) {
    if (!metric.name.startsWith("sef_eventhubs_connection")) continue;
    for (const v of metric.values) {
      const labels = Object.entries(v.labels)
        .filter(([k]) => k !== "sink")
        .map(([k, l]) => `${k}=${String(l)}`);
      out[`${metric.name}${labels.length ? `{${labels.join(",")}}` : ""}`] = v.value;
    }
  }
  return out;
}

const signal = (): AbortSignal => new AbortController().signal;

describe("eventhubs sink closes an idle connection", () => {
  it("closes after idleCloseMs, reopens for the next record (a heartbeat), delivers everything; metrics count it", async () => {
    const emulator = await peer();
    const metrics = new AgentMetrics();
    const s = sink(emulator, 300, metrics);

    expect(await s.send(entries([transition("EV-1", "Scheduled", 0)], 1), signal())).toEqual([{ kind: "delivered" }]);
    expect(emulator.stats.connectionsCurrent).toBe(1);
    expect(await metricValues(metrics)).toMatchObject({
      sef_eventhubs_connection_opens_total: 1,
      sef_eventhubs_connection_open: 1,
    });

    await until(() => emulator.stats.connectionsCurrent === 0, "the idle connection to close");
    expect(await metricValues(metrics)).toMatchObject({
      sef_eventhubs_connection_opens_total: 1,
      "sef_eventhubs_connection_closes_total{reason=idle}": 1,
      sef_eventhubs_connection_open: 0,
    });

    expect(await s.send(entries([heartbeat(1)], 2), signal())).toEqual([{ kind: "delivered" }]);
    expect(emulator.stats.connectionsCurrent).toBe(1);
    expect(emulator.stats.connectionsOpened).toBe(2);
    expect(emulator.stats.connectionsPeak).toBe(1);
    expect(
      emulator
        .events()
        .map((e) => (JSON.parse(String(e.body)) as { RecordType: string }).RecordType)
        .sort(),
    ).toEqual(["Heartbeat", "Transition"]);

    await s.close();
    await until(() => emulator.stats.connectionsCurrent === 0, "the connection to close at shutdown");
    expect(await metricValues(metrics)).toMatchObject({
      sef_eventhubs_connection_opens_total: 2,
      "sef_eventhubs_connection_closes_total{reason=idle}": 1,
      "sef_eventhubs_connection_closes_total{reason=shutdown}": 1,
      sef_eventhubs_connection_open: 0,
    });
  });

  it("keeps the connection while a send outlasts idleCloseMs (slow accepts), and with idleCloseMs 0 forever", async () => {
    const emulator = await peer();
    emulator.faults.setAcceptDelayMs(400);
    const slow = sink(emulator, 150);
    expect(await slow.send(entries([transition("EV-2", "Scheduled", 0)], 1), signal())).toEqual([
      { kind: "delivered" },
    ]);
    expect(emulator.stats.connectionsOpened).toBe(1);
    emulator.faults.setAcceptDelayMs(0);
    await until(() => emulator.stats.connectionsCurrent === 0, "the idle connection to close");

    const forever = sink(emulator, 0);
    expect(await forever.send(entries([transition("EV-3", "Scheduled", 0)], 1), signal())).toEqual([
      { kind: "delivered" },
    ]);
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(emulator.stats.connectionsCurrent).toBe(1);
  });

  it("loses nothing when records arrive around the moment the connection closes", async () => {
    const emulator = await peer();
    const s = sink(emulator, 40);
    const sendCount = 25;
    for (let i = 0; i < sendCount; i++) {
      // Gaps straddling the idle period: some sends reuse the connection, some race its close, some reopen it.
      await new Promise((resolve) => setTimeout(resolve, 25 + ((i * 7) % 35)));
      const result = await s.send(entries([transition(`EV-${i}`, "Scheduled", i)], i + 1), signal());
      expect(result, `send ${i}`).toEqual([{ kind: "delivered" }]);
    }
    expect(emulator.events()).toHaveLength(sendCount);
    expect(emulator.stats.connectionsOpened).toBeGreaterThan(1);
    expect(emulator.stats.connectionsPeak).toBeLessThanOrEqual(2);
  });
});
