// Real time over real sockets: a reference agent polling the simulator every 100 ms gets exactly the scenario's
// `expect` list (checks the wall-clock pacing, faults and NotBefore values as an agent sees them).
import { request } from "undici";
import { afterEach, describe, expect, it } from "vitest";
import type { ImdsDocument } from "../../src/testbed/simulator/document.js";
import { loadScenario } from "../../src/testbed/simulator/scenarios.js";
import { startSimulator, type Simulator } from "../../src/testbed/simulator/server.js";
import { ReferenceAgent, sortRecords } from "./reference-poller.js";

const open: Simulator[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});

async function pollThrough(name: string, speedFactor: number): Promise<{ agent: ReferenceAgent; sim: Simulator }> {
  const scenario = loadScenario(name);
  const sim = await startSimulator({ scenario, speed: scenario.speed * speedFactor });
  open.push(sim);
  const agent = new ReferenceAgent(scenario.vm.name);
  const endMs = Date.now() + sim.scenario.durationSeconds * (1000 / sim.speed) + 300;
  while (Date.now() < endMs) {
    const started = Date.now();
    try {
      const res = await request(`${sim.url}/metadata/scheduledevents?api-version=2020-07-01`, {
        headers: { Metadata: "true" },
        headersTimeout: 1000,
        bodyTimeout: 1000,
      });
      const text = await res.body.text();
      if (res.statusCode !== 200 || text.length > 1024 * 1024) throw new Error(`status ${res.statusCode}`);
      const doc = JSON.parse(text) as ImdsDocument;
      if (!Array.isArray(doc.Events)) throw new Error("no Events");
      const nowMs = Date.now();
      agent.document(
        doc.DocumentIncarnation,
        doc.Events.map((e) => ({
          EventId: e.EventId,
          EventStatus: e.EventStatus as "Scheduled" | "Started",
          Resources: e.Resources,
          notBeforeMs: e.NotBefore ? Date.parse(e.NotBefore) : null,
        })),
        nowMs,
      );
    } catch {
      agent.failedPoll();
    }
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, 100 - (Date.now() - started))));
  }
  return { agent, sim };
}

describe("real-time playback", () => {
  it("fault-500-burst at 1.5x its default speed", async () => {
    const { agent, sim } = await pollThrough("fault-500-burst", 1.5);
    expect(sortRecords(agent.records)).toEqual(sortRecords(sim.scenario.expect));
    expect(sim.status().faultsServed["status:500"]).toBeGreaterThanOrEqual(3);
  });

  it("two-events at 2x its default speed", async () => {
    const { agent, sim } = await pollThrough("two-events", 2);
    expect(sortRecords(agent.records)).toEqual(sortRecords(sim.scenario.expect));
    expect(sim.status()).toMatchObject({ ended: true, incarnation: 4 });
  });
});
