// A wall-clock step of an hour (back, then forward) under the built agent: polling goes on, a new event reaches the
// sink within the next few polls (counted at the simulator, not timed), an event still in the document is never ended,
// and each step is logged and counted. The child's Date is stepped by a preload; its monotonic clock is untouched.
import { describe, expect, it } from "vitest";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startSimulator } from "../../src/testbed/simulator/server.js";
import { readJsonl, runCli, waitUntil } from "../helpers/agent-process.js";

const preload = fileURLToPath(new URL("../helpers/step-clock.mjs", import.meta.url));
const pollIntervalMs = 200;
const hourMs = 3_600_000;

describe("wall-clock steps", () => {
  it("keep polling and delivering after a step back and a step forward of an hour", async () => {
    const sim = await startSimulator({ scenario: "idle" });
    const dir = mkdtempSync(join(tmpdir(), "sef-clock-"));
    const offsetFile = join(dir, "offset");
    const records = join(dir, "records.jsonl");
    const agent = runCli(
      [
        "run",
        "--imds-url",
        sim.url,
        "--poll-interval-ms",
        String(pollIntervalMs),
        "--data-dir",
        join(dir, "data"),
        "--sink",
        `jsonl:${records}`,
        "--heartbeat-interval-ms",
        "0",
        "--metrics-port",
        "0",
      ],
      { env: { NODE_OPTIONS: `--import ${preload}`, SEF_TEST_CLOCK_OFFSET_FILE: offsetFile } },
    );
    const step = (offsetMs: number): void => {
      writeFileSync(offsetFile, String(offsetMs));
      agent.child.kill("SIGUSR2");
    };
    const pollsSoFar = (): number =>
      Object.entries(sim.status().requests)
        .filter(([path]) => path.includes("scheduledevents"))
        .reduce((n, [, byStatus]) => n + Object.values(byStatus).reduce((a, b) => a + b, 0), 0);
    /** Sets the events, then returns how many polls the agent made until the Scheduled record of `eventId` was in the file. */
    const pollsToDeliver = async (events: Parameters<typeof sim.setEvents>[0], eventId: string): Promise<number> => {
      const before = pollsSoFar();
      sim.setEvents(events);
      await waitUntil(() => readJsonl(records).some((r) => r.EventId === eventId), 10_000, `the record of ${eventId}`);
      return pollsSoFar() - before;
    };
    /** Polling goes on: three more polls (at 200 ms; an agent timing its sleeps on the stepped clock would wait an hour). */
    const pollsGoOn = async (): Promise<void> => {
      const before = pollsSoFar();
      await waitUntil(() => pollsSoFar() - before >= 3, 5000, "three more polls after the step");
    };
    const eventA = {
      EventId: "C10C0000-0000-4000-8000-00000000000A",
      EventType: "Reboot",
      Resources: ["WestNO_0"],
      notBeforeInSeconds: 900,
    };
    const eventB = {
      EventId: "C10C0000-0000-4000-8000-00000000000B",
      EventType: "Freeze",
      Resources: ["WestNO_0"],
      notBeforeInSeconds: 900,
    };
    try {
      await waitUntil(
        () => pollsSoFar() >= 10,
        15_000,
        "the agent to poll (the rate limiter's window full of recent starts)",
      );

      step(-hourMs);
      await pollsGoOn();
      // The poll that sees the change records it (one more may be in flight, one more rate-limited).
      expect(await pollsToDeliver([eventA], eventA.EventId)).toBeLessThanOrEqual(3);
      expect(agent.stderr()).toContain("wall clock stepped back");

      step(+hourMs);
      await pollsGoOn();
      expect(await pollsToDeliver([eventA, eventB], eventB.EventId)).toBeLessThanOrEqual(3);
      expect(agent.stderr()).toContain("wall clock stepped forward");
      await pollsGoOn(); // polls that would end event A, were the step read as its absence
      expect(await agent.stop("SIGTERM")).toBe(0);
    } finally {
      await agent.stop("SIGKILL");
      await sim.close();
    }
    // Event A stayed in the document throughout: it was recorded once, as Scheduled, and never ended.
    const ofA = readJsonl(records).filter((r) => r.EventId === eventA.EventId);
    expect(ofA.map((r) => r.EventStatus)).toEqual(["Scheduled"]);
    const steps = agent
      .stderr()
      .split("\n")
      .filter((l) => l.includes("wall clock stepped"))
      .map((l) => JSON.parse(l) as { direction: string });
    expect(steps.map((s) => s.direction)).toEqual(["back", "forward"]);
  });
});
