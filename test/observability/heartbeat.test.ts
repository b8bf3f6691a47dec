import { describe, expect, it } from "vitest";
import { departureSignal, startHeartbeats } from "../../src/agent/observability/heartbeat.js";
import { goodbyeHeartbeatRecord, heartbeatRecord } from "../../src/contract/heartbeat-record.js";
import type { HeartbeatRecord } from "../../src/contract/record.js";
import { deterministicUuid, recordSource } from "../../src/contract/record-id.js";
import { FakeClock } from "../helpers/fake-clock.js";
import { transition, vm } from "../actions/fixtures.js";

const t0 = Date.UTC(2024, 0, 1, 0, 0, 0);

describe("heartbeatRecord", () => {
  it("builds a Heartbeat record with stats as JSON Detail and a deterministic id", () => {
    const record = heartbeatRecord({ vm: { ...vm, extra: "x" } as typeof vm, agentVersion: "1.2.3" }, t0, {
      polls: 10,
      outboxDepth: 2,
    });
    expect(record).toEqual({
      ...vm,
      RecordId: deterministicUuid(recordSource(vm), "Heartbeat", "2024-01-01T00:00:00.000Z"),
      RecordType: "Heartbeat",
      TimeGenerated: "2024-01-01T00:00:00.000Z",
      ObservedAt: "2024-01-01T00:00:00.000Z",
      AgentVersion: "1.2.3",
      Detail: '{"polls":10,"outboxDepth":2}',
    });
    expect(heartbeatRecord({ vm, agentVersion: "1" }, t0, {}).RecordId).toBe(record.RecordId);
    expect(heartbeatRecord({ vm, agentVersion: "1" }, t0 + 1, {}).RecordId).not.toBe(record.RecordId);
  });
});

describe("startHeartbeats", () => {
  function collect(clock: FakeClock, intervalMs: number, emit?: (r: HeartbeatRecord) => void | Promise<void>) {
    const times: string[] = [];
    let n = 0;
    const handle = startHeartbeats({
      intervalMs,
      clock,
      vm,
      agentVersion: "1",
      stats: () => ({ n: ++n }),
      emit: async (r) => {
        times.push(r.TimeGenerated);
        await emit?.(r);
      },
    });
    return { times, handle };
  }

  it("emits one at start and then one every interval", async () => {
    const clock = new FakeClock(t0);
    const { times, handle } = collect(clock, 900_000);
    await clock.advance(0);
    expect(times).toEqual(["2024-01-01T00:00:00.000Z"]);
    await clock.advance(899_999);
    expect(times).toHaveLength(1);
    await clock.advance(1);
    expect(times).toEqual(["2024-01-01T00:00:00.000Z", "2024-01-01T00:15:00.000Z"]);
    await clock.advance(3 * 900_000);
    expect(times.slice(2)).toEqual([
      "2024-01-01T00:30:00.000Z",
      "2024-01-01T00:45:00.000Z",
      "2024-01-01T01:00:00.000Z",
    ]);
    await handle.stop();
    await clock.advance(10 * 900_000);
    expect(times).toHaveLength(5);
    expect(clock.pendingSleeps).toBe(0);
  });

  it("does not drift when emitting takes time", async () => {
    const clock = new FakeClock(t0);
    const { times, handle } = collect(clock, 60_000, () => clock.sleep(5_000));
    await clock.advance(3 * 60_000);
    expect(times).toEqual([
      "2024-01-01T00:00:00.000Z",
      "2024-01-01T00:01:00.000Z",
      "2024-01-01T00:02:00.000Z",
      "2024-01-01T00:03:00.000Z",
    ]);
    const stopping = handle.stop(); // waits for the emit in progress
    await clock.advance(5_000);
    await stopping;
    await clock.advance(60_000);
    expect(times).toHaveLength(4);
  });

  it("after a suspension, beats once and returns to the grid (no burst)", async () => {
    const clock = new FakeClock(t0);
    const { times, handle } = collect(clock, 60_000);
    await clock.advance(0);
    clock.jump(5 * 60_000 + 10_000);
    await clock.advance(0);
    expect(times).toEqual(["2024-01-01T00:00:00.000Z", "2024-01-01T00:05:10.000Z"]);
    await clock.advance(50_000);
    expect(times[2]).toBe("2024-01-01T00:06:00.000Z");
    await handle.stop();
  });

  it("keeps beating after an emit fails", async () => {
    const clock = new FakeClock(t0);
    let calls = 0;
    const handle = startHeartbeats({
      intervalMs: 1000,
      clock,
      vm,
      agentVersion: "1",
      stats: () => ({}),
      emit: () => {
        calls++;
        if (calls === 1) throw new Error("outbox full");
      },
    });
    await clock.advance(2000);
    expect(calls).toBe(3);
    await handle.stop();
  });

  it("intervalMs 0 turns heartbeats off", async () => {
    const clock = new FakeClock(t0);
    const { times, handle } = collect(clock, 0);
    await clock.advance(10_000_000);
    expect(times).toEqual([]);
    await handle.stop();
  });
});

describe("the goodbye heartbeat", () => {
  it("is a Heartbeat with Outcome Stopping, the reason and stats in Detail, and its own deterministic id", () => {
    const record = goodbyeHeartbeatRecord({ vm, agentVersion: "1.2.3" }, t0, "shutdown", { polls: 3 });
    expect(record).toMatchObject({
      RecordType: "Heartbeat",
      Outcome: "Stopping",
      TimeGenerated: "2024-01-01T00:00:00.000Z",
      ObservedAt: "2024-01-01T00:00:00.000Z",
    });
    expect(JSON.parse(record.Detail)).toEqual({ state: "Stopping", reason: "shutdown", polls: 3 });
    expect(record.RecordId).toBe(deterministicUuid(recordSource(vm), "HeartbeatStopping", "2024-01-01T00:00:00.000Z"));
    expect(record.RecordId).not.toBe(heartbeatRecord({ vm, agentVersion: "1.2.3" }, t0, {}).RecordId);
    expect(heartbeatRecord({ vm, agentVersion: "1" }, t0, {}).Outcome).toBeUndefined();
  });

  it("is triggered by this VM's own Terminate or Preempt (Scheduled or Started) and undone by its Canceled", () => {
    const mine = (EventType: string, EventStatus: "Scheduled" | "Started" | "Completed" | "Canceled") =>
      transition({ EventType, EventStatus, EventId: "E1", AffectsThisVm: true });
    expect(departureSignal([mine("Terminate", "Scheduled")])).toEqual({
      kind: "goodbye",
      reason: "Terminate Scheduled E1",
    });
    expect(departureSignal([mine("Preempt", "Started")])).toEqual({ kind: "goodbye", reason: "Preempt Started E1" });
    expect(departureSignal([mine("Terminate", "Canceled")])).toEqual({
      kind: "resume",
      reason: "Terminate Canceled E1",
    });
    expect(
      departureSignal([mine("Reboot", "Scheduled"), mine("Freeze", "Started"), mine("Terminate", "Completed")]),
    ).toBeUndefined();
    expect(
      departureSignal([transition({ EventType: "Terminate", EventStatus: "Scheduled", AffectsThisVm: false })]),
    ).toBeUndefined();
  });

  it("pauses the beats after a goodbye, resumes at once on resume, and stop(reason) writes the goodbye last", async () => {
    const clock = new FakeClock(t0);
    const written: HeartbeatRecord[] = [];
    const handle = startHeartbeats({
      intervalMs: 60_000,
      clock,
      vm,
      agentVersion: "1",
      stats: () => ({}),
      emit: (r) => void written.push(r),
    });
    await clock.advance(0);
    expect(written.map((r) => r.Outcome ?? "beat")).toEqual(["beat"]);
    await handle.goodbye("Terminate Scheduled E1");
    await clock.advance(3 * 60_000);
    expect(written.map((r) => r.Outcome ?? "beat")).toEqual(["beat", "Stopping"]);
    await handle.resume();
    expect(written.map((r) => r.Outcome ?? "beat")).toEqual(["beat", "Stopping", "beat"]);
    await clock.advance(60_000);
    expect(written).toHaveLength(4);
    await handle.stop("shutdown");
    expect(written.at(-1)).toMatchObject({ Outcome: "Stopping" });
    expect(JSON.parse(written.at(-1)!.Detail)).toMatchObject({ reason: "shutdown" });
    await clock.advance(10 * 60_000);
    expect(written).toHaveLength(5);
    expect(clock.pendingSleeps).toBe(0);
  });
});
