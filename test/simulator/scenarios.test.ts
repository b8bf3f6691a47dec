// Every shipped scenario loads, validates, is short at its default speed, and its `expect` list follows the record contract.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { listScenarioNames, listScenarios, loadScenario } from "../../src/testbed/simulator/scenarios.js";
import { parseScenario, ScenarioError, type Scenario } from "../../src/testbed/simulator/scenario-schema.js";
import { Timeline } from "../../src/testbed/simulator/timeline.js";
import { referenceRecords, sortRecords } from "./reference-poller.js";

const required = [
  "live-migration",
  "user-reboot",
  "redeploy",
  "cancelled-maintenance",
  "hardware-failure",
  "spot-preempt",
  "scaleset-terminate",
  "degraded-hardware",
  "two-events",
  "neighbour-event",
  "disable-reset",
  "fault-500-burst",
  "fault-410",
  "fault-429",
  "fault-slow-first-call",
  "fault-malformed-json",
  "fault-huge-body",
];

/** Wall-clock ms between consecutive document changes (and from start to the first one) at the default speed. */
function changeSpacingMs(scenario: Scenario): number[] {
  const tl = new Timeline(scenario);
  tl.start(0);
  tl.advance(tl.wallMs(scenario.durationSeconds));
  const times = [0, ...tl.changes().map((c) => c.atMs), tl.wallMs(scenario.durationSeconds)];
  return times.slice(1).map((t, i) => t - (times[i] as number));
}

describe("built-in scenarios", () => {
  it("ships every required scenario, named after its file", () => {
    const names = listScenarioNames();
    for (const name of required) expect(names).toContain(name);
    for (const scenario of listScenarios()) expect(listScenarioNames()).toContain(scenario.name);
  });

  it.each(listScenarioNames())(
    "%s: expect matches the record contract for a continuous poller (100 ms and 250 ms)",
    (name) => {
      const scenario = loadScenario(name);
      const wanted = sortRecords(scenario.expect);
      expect(sortRecords(referenceRecords(scenario, { pollIntervalMs: 100 }))).toEqual(wanted);
      expect(sortRecords(referenceRecords(scenario, { pollIntervalMs: 250 }))).toEqual(wanted);
    },
  );

  it.each(listScenarioNames())("%s: short at its default speed, every document lasting at least ~1 s", (name) => {
    const scenario = loadScenario(name);
    expect(scenario.durationSeconds / scenario.speed).toBeLessThanOrEqual(6);
    if (scenario.durationSeconds === 0) return;
    for (const spacing of changeSpacingMs(scenario)) expect(spacing).toBeGreaterThanOrEqual(950);
  });

  it("fault scenarios carry events and at least one fault", () => {
    for (const scenario of listScenarios().filter((s) => s.name.startsWith("fault-"))) {
      expect(
        scenario.steps.some((s) => s.fault),
        scenario.name,
      ).toBe(true);
      expect(scenario.expect.length, scenario.name).toBeGreaterThan(0);
    }
  });

  it("the reference poller sees the neighbour event as not affecting this VM, and would as WestNO_1", () => {
    const scenario = loadScenario("neighbour-event");
    expect(referenceRecords(scenario, { pollIntervalMs: 100 }).every((r) => !r.AffectsThisVm)).toBe(true);
    expect(referenceRecords(scenario, { pollIntervalMs: 100, vmName: "westno_1" }).every((r) => r.AffectsThisVm)).toBe(
      true,
    );
  });
});

describe("scenario loading and validation", () => {
  const messageOf = (value: unknown): string => {
    try {
      parseScenario(value, "bad.json");
    } catch (err) {
      expect(err).toBeInstanceOf(ScenarioError);
      return (err as Error).message;
    }
    throw new Error("scenario was accepted");
  };

  it("names the bad field (shape errors)", () => {
    const message = messageOf({
      name: "bad",
      description: "x",
      durationSeconds: 10,
      steps: [
        { at: 1, fault: { kind: "status", status: 200 } },
        { at: 2 },
        { at: 3, events: [{ EventId: "E2", EventType: "Freeze", Resources: ["a"], NotBefore: "x" }] },
      ],
      expect: [{ EventId: "E7", EventStatus: "Gone" }],
    });
    expect(message).toContain("invalid scenario bad.json:");
    expect(message).toContain("steps[0].fault.status: Too small");
    expect(message).toContain("steps[1]: a step needs `events`, `reset` or `fault`");
    expect(message).toContain('steps[2].events[0]: Unrecognized key: "NotBefore"');
    expect(message).toContain("expect[0].EventStatus");
  });

  it("names the bad field (timeline errors)", () => {
    const message = messageOf({
      name: "bad",
      description: "x",
      durationSeconds: 10,
      steps: [
        { at: 0, events: [{ EventId: "E1", Resources: ["a"] }] },
        { at: 20, events: [] },
        { at: 1, events: [] },
      ],
      expect: [{ EventId: "E7", EventStatus: "Canceled" }],
    });
    expect(message).toContain("steps[0].events[0].EventType: required on the first appearance of event E1");
    expect(message).toContain("steps[1].at: after durationSeconds (10)");
    expect(message).toContain("steps[2].at: steps must be in time order (1 < 20)");
    expect(message).toContain("expect[0].EventId: no step lists event E7");
  });

  it("loads a scenario from a file path and reports unknown names and broken files clearly", () => {
    const dir = mkdtempSync(join(tmpdir(), "sef-scenario-"));
    const file = join(dir, "mine.json");
    writeFileSync(file, JSON.stringify({ name: "mine", description: "d", durationSeconds: 1, steps: [] }));
    expect(loadScenario(file)).toMatchObject({
      name: "mine",
      speed: 1,
      startedForSeconds: 600,
      vm: { name: "WestNO_0" },
      expect: [],
    });
    writeFileSync(join(dir, "broken.json"), "{ not json");
    expect(() => loadScenario(join(dir, "broken.json"))).toThrow(/is not valid JSON/);
    expect(() => loadScenario(join(dir, "missing.json"))).toThrow(/does not exist/);
    expect(() => loadScenario("no-such-scenario")).toThrow(
      /unknown scenario "no-such-scenario"; built-in scenarios: .*live-migration/,
    );
  });
});
