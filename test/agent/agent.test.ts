// The agent built from its real stages (poll → collect → commit → drain/act) against the IMDS simulator over a real
// socket, with a toy sink defined here: records flow end to end; a sink added later starts at the head of the outbox,
// and --replay-from backfills it on purpose.
import { afterEach, describe, expect, it } from "vitest";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent } from "../../src/agent/pipeline/agent.js";
import { loadConfig } from "../../src/agent/config/load.js";
import { silentLogger } from "../../src/agent/observability/logger.js";
import { systemClock } from "../../src/runtime/clock.js";
import { startSimulator, type Simulator } from "../../src/testbed/simulator/server.js";
import { parseScenario } from "../../src/testbed/simulator/scenario-schema.js";
import { allOutcomes, delivered, retry, type SendOutcomes, type Sink } from "../../src/agent/sinks/sink.js";
import type { OutboxEntry } from "../../src/agent/delivery/outbox-entry.js";
import type { ReplayFrom } from "../../src/agent/delivery/outbox.js";
import { unknownVmIdentity, type HeartbeatRecord } from "../../src/contract/record.js";
import { waitUntil } from "../helpers/agent-process.js";

/** A toy sink: keeps what it is sent in memory. */
class MemorySink implements Sink {
  readonly maxBatchRecords = 100;
  readonly lingerMs = 0;
  readonly received: string[] = [];
  constructor(readonly name: string) {}
  async send(batch: readonly OutboxEntry[]): Promise<SendOutcomes> {
    for (const e of batch)
      this.received.push(`${e.record.RecordType}:${(e.record as { EventStatus?: string }).EventStatus ?? ""}`);
    return allOutcomes(batch, delivered);
  }
  async close(): Promise<void> {}
}

/** A toy sink whose destination is always busy. */
class SlowSink extends MemorySink {
  override async send(batch: readonly OutboxEntry[]): Promise<SendOutcomes> {
    return allOutcomes(batch, retry("busy", 60_000));
  }
}

const scenario = parseScenario(
  {
    name: "agent-stages",
    description: "one event, Scheduled then Started",
    speed: 60,
    durationSeconds: 120,
    vm: { name: "WestNO_0" },
    steps: [
      {
        at: 6,
        events: [
          {
            EventId: "A1B2C3D4-0000-4000-8000-000000000001",
            EventType: "Reboot",
            Resources: ["WestNO_0"],
            EventStatus: "Scheduled",
            notBeforeInSeconds: 600,
            autoStart: false,
          },
        ],
      },
      {
        at: 30,
        events: [
          {
            EventId: "A1B2C3D4-0000-4000-8000-000000000001",
            EventType: "Reboot",
            Resources: ["WestNO_0"],
            EventStatus: "Started",
            notBeforeInSeconds: 600,
            autoStart: false,
          },
        ],
      },
    ],
    expect: [],
  },
  "agent-stages",
);

let sim: Simulator | undefined;
const agents: Agent[] = [];
afterEach(async () => {
  for (const agent of agents.splice(0)) await agent.stop();
  await sim?.close();
});

function agentWith(dataDir: string, sinks: Sink[], replayFrom?: ReplayFrom): Agent {
  const { config } = loadConfig({
    env: {},
    flags: {
      imdsUrl: sim!.url,
      dataDir,
      pollIntervalMs: "200",
      sinks: ["stdout"],
      heartbeatIntervalMs: "0",
      metricsPort: "0",
      shutdownFlushMs: "1000",
    },
  });
  const agent = new Agent({
    config,
    sinks,
    logger: silentLogger(),
    clock: systemClock,
    agentVersion: "test",
    ...(replayFrom ? { replayFrom } : {}),
  });
  agents.push(agent);
  return agent;
}

describe("agent composed of its stages", () => {
  it("polls, collects, commits and drains to a toy sink; a new sink starts at the head unless replayed", async () => {
    sim = await startSimulator({ scenario });
    const dataDir = mkdtempSync(join(tmpdir(), "sef-agent-"));
    const first = new MemorySink("stdout");
    const agent = agentWith(dataDir, [first, new SlowSink("slow")]);
    const transitions: string[] = [];
    agent.committed.follow((entries) =>
      transitions.push(...entries.flatMap((e) => (e.record.RecordType === "Transition" ? [e.record.EventStatus] : []))),
    );
    await agent.prepare();
    agent.start();
    await waitUntil(
      () => first.received.includes("Transition:Started"),
      15_000,
      "the Started transition at the toy sink",
    );
    expect(first.received).toEqual(["Transition:Scheduled", "Transition:Started"]);
    expect(transitions).toEqual(["Scheduled", "Started"]);
    expect(agent.readiness()).toMatchObject({
      storeWritable: true,
      sinks: [{ name: "stdout", stuckForMs: 0 }, { name: "slow" }],
    });
    expect(await agent.heartbeatStats()).toMatchObject({ undelivered: { stdout: 0, slow: 2 }, knownEvents: 1 });
    expect(agent.appendRecords([{ ...heartbeatLike(), RecordId: "hb-1" }])).toHaveLength(1);
    await waitUntil(() => first.received.includes("Heartbeat:"), 5000, "the heartbeat at the toy sink");
    await agent.stop();
    agents.length = 0;

    // The slow sink still holds all three records. A sink added now starts at the head: none of them is its.
    const added = new MemorySink("jsonl:/added");
    const again = agentWith(dataDir, [new MemorySink("stdout"), new SlowSink("slow"), added]);
    expect(again.outbox.depth("slow").records).toBe(3);
    expect(again.outbox.depth("jsonl:/added").records).toBe(0);
    await again.stop();
    agents.length = 0;

    // --replay-from backfills on purpose: what is still held from that point on is pending again for every sink.
    const replaying = agentWith(
      dataDir,
      [new MemorySink("stdout"), new SlowSink("slow"), new MemorySink("jsonl:/added")],
      { seq: 0 },
    );
    expect(replaying.outbox.depth("jsonl:/added").records).toBe(3);
    expect(replaying.outbox.depth("stdout").records).toBe(3);
    expect(replaying.outbox.depth("slow").records).toBe(3);
  });
});

function heartbeatLike(): HeartbeatRecord {
  const at = new Date().toISOString();
  return {
    RecordId: "",
    RecordType: "Heartbeat",
    TimeGenerated: at,
    ObservedAt: at,
    ...unknownVmIdentity,
    AgentId: "test-agent",
    AgentVersion: "test",
    Detail: "",
  };
}
