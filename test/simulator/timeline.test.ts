// Pure timeline logic with plain values and fake wall-clock times: steps, auto-start, approvals, resets, faults, loops.
import { describe, expect, it } from "vitest";
import { parseScenario, type ScenarioInput } from "../../src/testbed/simulator/scenario-schema.js";
import { Timeline } from "../../src/testbed/simulator/timeline.js";

const t0 = 1_700_000_000_000;

function scenario(partial: Partial<ScenarioInput> & Pick<ScenarioInput, "steps">): ReturnType<typeof parseScenario> {
  return parseScenario({ name: "t", description: "test", durationSeconds: 10_000, speed: 1, ...partial }, "test");
}

const freeze = { EventId: "E1", EventType: "Freeze", Resources: ["vm0"], notBeforeInSeconds: 100 };

describe("Timeline", () => {
  it("plays steps in time order and bumps the incarnation only when the document changes", () => {
    const tl = new Timeline(
      scenario({
        steps: [
          { at: 0, events: [] },
          { at: 10, events: [freeze] },
          { at: 20, events: [{ EventId: "E1" }], note: "same content" },
          { at: 30, events: [{ EventId: "E1", EventStatus: "Started" }] },
          { at: 40, events: [] },
        ],
      }),
    );
    expect(tl.snapshot().incarnation).toBe(0);
    tl.start(t0);
    expect(tl.snapshot()).toEqual({ incarnation: 0, events: [] });
    tl.advance(t0 + 9_999);
    expect(tl.snapshot().events).toHaveLength(0);
    tl.advance(t0 + 10_000);
    const scheduled = tl.snapshot();
    expect(scheduled.incarnation).toBe(1);
    expect(scheduled.events[0]).toMatchObject({
      EventId: "E1",
      EventStatus: "Scheduled",
      EventType: "Freeze",
      notBeforeMs: t0 + 110_000,
      EventSource: "Platform",
      DurationInSeconds: -1,
    });
    tl.advance(t0 + 25_000);
    expect(tl.incarnation).toBe(1);
    tl.advance(t0 + 30_000);
    expect(tl.snapshot().events[0]).toMatchObject({
      EventStatus: "Started",
      startedAtMs: t0 + 30_000,
      EventType: "Freeze",
    });
    expect(tl.incarnation).toBe(2);
    tl.advance(t0 + 60_000);
    expect(tl.snapshot()).toEqual({ incarnation: 3, events: [] });
  });

  it("converts scenario seconds to wall time with the speed", () => {
    const tl = new Timeline(scenario({ speed: 60, steps: [{ at: 60, events: [freeze] }] }), { speed: 120 });
    tl.start(t0);
    tl.advance(t0 + 499);
    expect(tl.snapshot().events).toHaveLength(0);
    tl.advance(t0 + 500);
    expect(tl.snapshot().events[0]?.notBeforeMs).toBe(t0 + 500 + (100 * 1000) / 120);
    expect(tl.scenarioSeconds(t0 + 1000)).toBe(120);
  });

  it("starts a Scheduled event by itself when NotBefore passes, then removes it after startedForSeconds", () => {
    const tl = new Timeline(scenario({ startedForSeconds: 50, steps: [{ at: 0, events: [freeze] }] }));
    tl.start(t0);
    tl.advance(t0 + 99_999);
    expect(tl.snapshot().events[0]?.EventStatus).toBe("Scheduled");
    const changes = tl.advance(t0 + 200_000);
    expect(changes.map((c) => [c.incarnation, c.cause, c.events])).toEqual([
      [2, "auto", ["E1:Started"]],
      [3, "auto", []],
    ]);
    expect(changes[0]?.atMs).toBe(t0 + 100_000);
    expect(changes[1]?.atMs).toBe(t0 + 150_000);
  });

  it("keeps an event Scheduled past NotBefore when autoStart is false", () => {
    const tl = new Timeline(scenario({ steps: [{ at: 0, events: [{ ...freeze, autoStart: false }] }] }));
    tl.start(t0);
    tl.advance(t0 + 5_000_000);
    expect(tl.snapshot().events[0]?.EventStatus).toBe("Scheduled");
  });

  it("approval starts a Scheduled event at once; a later step cannot move it back or revive it", () => {
    const tl = new Timeline(
      scenario({
        steps: [
          { at: 0, events: [{ ...freeze, startedForSeconds: 30 }] },
          { at: 50, events: [{ EventId: "E1", EventStatus: "Scheduled" }] },
          { at: 80, events: [{ EventId: "E1", EventStatus: "Started" }] },
        ],
      }),
    );
    tl.start(t0);
    expect(tl.approve(["E1", "nope"], t0 + 10_000)).toEqual(["started", "unknown"]);
    expect(tl.snapshot()).toMatchObject({
      incarnation: 2,
      events: [{ EventStatus: "Started", startedAtMs: t0 + 10_000 }],
    });
    expect(tl.approve(["E1"], t0 + 11_000)).toEqual(["already-started"]);
    expect(tl.incarnation).toBe(2);
    tl.advance(t0 + 39_999);
    expect(tl.snapshot().events).toHaveLength(1);
    tl.advance(t0 + 40_000);
    expect(tl.snapshot()).toEqual({ incarnation: 3, events: [] });
    tl.advance(t0 + 100_000);
    expect(tl.snapshot()).toEqual({ incarnation: 3, events: [] });
  });

  it("a reset step starts the incarnation over at 1", () => {
    const tl = new Timeline(
      scenario({
        steps: [
          { at: 1, events: [freeze] },
          { at: 2, events: [{ EventId: "E1", notBeforeInSeconds: 500 }] },
          { at: 3, reset: true },
          { at: 4, events: [{ EventId: "E1", EventStatus: "Started" }] },
        ],
      }),
    );
    tl.start(t0);
    tl.advance(t0 + 2_000);
    expect(tl.incarnation).toBe(2);
    const changes = tl.advance(t0 + 3_000);
    expect(changes.map((c) => [c.incarnation, c.cause])).toEqual([[1, "reset"]]);
    expect(tl.snapshot().events[0]?.EventStatus).toBe("Scheduled");
    tl.advance(t0 + 4_000);
    expect(tl.incarnation).toBe(2);
  });

  it("replaceEvents sets the document now with a new incarnation and checks first appearances", () => {
    const tl = new Timeline(scenario({ durationSeconds: 0, steps: [] }));
    expect(tl.replaceEvents([freeze], t0)).toBe(1);
    expect(tl.replaceEvents([{ EventId: "E1" }], t0 + 1)).toBe(2);
    expect(tl.snapshot().events[0]?.EventType).toBe("Freeze");
    expect(() => tl.replaceEvents([{ EventId: "E9" }], t0 + 2)).toThrow(
      /Events\[0\]\.EventType: required on the first appearance/,
    );
    expect(tl.replaceEvents([], t0 + 3)).toBe(3);
    expect(tl.snapshot().events).toEqual([]);
  });

  it("stops time-based changes at the end, unless it loops", () => {
    const steps: ScenarioInput["steps"] = [
      { at: 0, events: [] },
      { at: 5, events: [freeze] },
    ];
    const once = new Timeline(scenario({ durationSeconds: 10, steps }));
    once.start(t0);
    once.advance(t0 + 1_000_000);
    expect(once.ended(t0 + 1_000_000)).toBe(true);
    expect(once.snapshot().events[0]?.EventStatus).toBe("Scheduled");

    const looping = new Timeline(scenario({ durationSeconds: 10, steps }), { loop: true });
    looping.start(t0);
    looping.advance(t0 + 12_000);
    expect(looping.loopIndex).toBe(1);
    expect(looping.snapshot()).toEqual({ incarnation: 2, events: [] });
    looping.advance(t0 + 15_000);
    expect(looping.incarnation).toBe(3);
    expect(looping.ended(t0 + 15_000)).toBe(false);
  });

  it("serves faults for a time window or a number of requests", () => {
    const tl = new Timeline(
      scenario({
        steps: [
          { at: 10, fault: { kind: "status", status: 500, forSeconds: 5 } },
          { at: 20, fault: { kind: "reset", count: 2 } },
          { at: 30, fault: { kind: "malformed-json" } },
        ],
      }),
    );
    tl.start(t0);
    expect(tl.takeFault(t0 + 9_999)).toBeNull();
    expect(tl.takeFault(t0 + 10_000)).toMatchObject({ kind: "status", status: 500 });
    expect(tl.takeFault(t0 + 14_999)).toMatchObject({ kind: "status" });
    expect(tl.takeFault(t0 + 15_000)).toBeNull();
    expect(tl.takeFault(t0 + 25_000)?.kind).toBe("reset");
    expect(tl.takeFault(t0 + 25_000)?.kind).toBe("reset");
    expect(tl.takeFault(t0 + 25_000)).toBeNull();
    expect(tl.takeFault(t0 + 31_000)?.kind).toBe("malformed-json");
    expect(tl.takeFault(t0 + 31_000)).toBeNull();
  });

  it("skip moves scenario time forward, pending NotBefore included", () => {
    const tl = new Timeline(
      scenario({
        speed: 10,
        steps: [
          { at: 0, events: [freeze] },
          { at: 500, events: [] },
        ],
      }),
    );
    tl.start(t0);
    expect(tl.snapshot().events[0]?.notBeforeMs).toBe(t0 + 10_000);
    tl.fastForward(100, t0);
    expect(tl.snapshot().events[0]?.EventStatus).toBe("Started");
    expect(tl.scenarioSeconds(t0)).toBe(100);
  });

  it("does nothing before start", () => {
    const tl = new Timeline(scenario({ steps: [{ at: 0, events: [freeze] }] }));
    expect(tl.advance(t0 + 1e9)).toEqual([]);
    expect(tl.started).toBe(false);
    expect(tl.takeFault(t0)).toBeNull();
  });

  it("rejects a loop over a zero-length scenario and a non-positive speed", () => {
    expect(() => new Timeline(scenario({ durationSeconds: 0, steps: [] }), { loop: true })).toThrow(/cannot loop/);
    expect(() => new Timeline(scenario({ steps: [] }), { speed: 0 })).toThrow(/speed/);
  });
});
