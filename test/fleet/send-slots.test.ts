// SendSlots: at most N requests to a target at once, the rest wait in order; a waiter whose partition closes leaves
// the queue without sending.
import { describe, expect, it } from "vitest";
import { priorityOf, sendPriority, SendSlots } from "../../src/fleet/targets/send-slots.js";
import { fleetSettingsSchema, sendsInFlightFor } from "../../src/fleet/settings.js";

const tick = () => new Promise((r) => setImmediate(r));

describe("SendSlots", () => {
  it("holds at most the limit in flight and hands slots over in order", async () => {
    const slots = new SendSlots(2);
    const never = new AbortController().signal;
    const order: number[] = [];
    const waiters = [1, 2, 3, 4].map((n) => slots.acquire(never).then((ok) => (order.push(n), ok)));
    await tick();
    expect(order).toEqual([1, 2]);
    slots.release();
    await tick();
    expect(order).toEqual([1, 2, 3]);
    slots.release();
    await tick();
    expect(order).toEqual([1, 2, 3, 4]);
    expect(await Promise.all(waiters)).toEqual([true, true, true, true]);
  });

  it("hands a free slot to an urgent waiter (a new event's trigger) before the others (updates, resolves)", async () => {
    const slots = new SendSlots(1);
    const never = new AbortController().signal;
    const order: string[] = [];
    expect(await slots.acquire(never)).toBe(true);
    const waiters = [
      slots.acquire(never).then(() => order.push("update 1")),
      slots.acquire(never).then(() => order.push("update 2")),
      slots.acquire(never, sendPriority.trigger).then(() => order.push("trigger")),
    ];
    for (let i = 0; i < 3; i++) {
      slots.release();
      await tick();
    }
    await Promise.all(waiters);
    expect(order).toEqual(["trigger", "update 1", "update 2"]);
  });

  it("keeps one slot beyond the limit for a known reporter's trigger; the next waits, ahead of a flood's triggers", async () => {
    const slots = new SendSlots(1);
    const never = new AbortController().signal;
    const order: string[] = [];
    expect(await slots.acquire(never)).toBe(true); // a flood's trigger in flight: the limit is reached
    const waiters = [
      slots.acquire(never, sendPriority.other).then(() => order.push("update")),
      slots.acquire(never, sendPriority.trigger).then(() => order.push("flood 1")),
      slots.acquire(never, sendPriority.trigger).then(() => order.push("flood 2")),
      slots.acquire(never, sendPriority.knownTrigger).then(() => order.push("real 1")),
      slots.acquire(never, sendPriority.knownTrigger).then(() => order.push("real 2")),
    ];
    await tick();
    expect(order).toEqual(["real 1"]); // the reserve, without waiting for the flood's request
    slots.release(); // real 1 answered: the reserve is free again, real 2 takes it
    await tick();
    expect(order).toEqual(["real 1", "real 2"]);
    slots.release(); // the flood's first request answered: two in flight were one over the limit, so none goes
    await tick();
    expect(order).toEqual(["real 1", "real 2"]);
    for (let i = 0; i < 3; i++) {
      slots.release();
      await tick();
    }
    await Promise.all(waiters);
    expect(order).toEqual(["real 1", "real 2", "flood 1", "flood 2", "update"]);
    // The update's slot released: the limit holds again for the others (one goes, the next waits).
    slots.release();
    const granted: string[] = [];
    void slots.acquire(never, sendPriority.trigger).then(() => granted.push("first"));
    void slots.acquire(never, sendPriority.trigger).then(() => granted.push("second"));
    await tick();
    expect(granted).toEqual(["first"]);
    const priorities = [
      { action: "trigger", knownReporter: true },
      { action: "trigger", knownReporter: false },
      { action: "update", knownReporter: true },
      { action: "resolve", knownReporter: false },
    ].map(priorityOf);
    expect(priorities).toEqual([
      sendPriority.knownTrigger,
      sendPriority.trigger,
      sendPriority.other,
      sendPriority.other,
    ]);
  });

  it("lets an aborted waiter go without a slot, and does not count it", async () => {
    const slots = new SendSlots(1);
    const never = new AbortController().signal;
    expect(await slots.acquire(never)).toBe(true);
    const closing = new AbortController();
    const dropped = slots.acquire(closing.signal);
    const next = slots.acquire(never);
    closing.abort();
    expect(await dropped).toBe(false);
    slots.release();
    expect(await next).toBe(true);
    // The slot next held is the only one in use: one more waits until it is released.
    let third = false;
    void slots.acquire(never).then(() => (third = true));
    await tick();
    expect(third).toBe(false);
    slots.release();
    await tick();
    expect(third).toBe(true);
    expect(await slots.acquire(closing.signal)).toBe(false);
  });
});

describe("requests in flight per target", () => {
  const settings = (targetExtra: Record<string, unknown> = {}, top: Record<string, unknown> = {}) =>
    fleetSettingsSchema.parse({
      eventHubs: {
        consumerGroup: "$Default",
        connection: {
          connectionString: "Endpoint=sb://127.0.0.1/;SharedAccessKeyName=k;SharedAccessKey=v;EntityPath=h",
        },
      },
      checkpoints: { connectionStringEnv: "S", containerName: "sef-fleet" },
      targets: [
        { name: "chat", type: "slack", urlEnv: "A", ...targetExtra },
        { name: "channel", type: "teams", urlEnv: "B" },
        { name: "oncall", type: "pagerduty", routingKeyEnv: "C" },
        { name: "hook", type: "webhook", urlEnv: "D" },
      ],
      rules: [{ name: "all", targets: ["chat", "channel", "oncall", "hook"] }],
      ...top,
    });

  it("one at a time to chat webhooks (no idempotency key, about a message a second), the fleet setting for the others", () => {
    const s = settings();
    expect(s.targets.map((t) => sendsInFlightFor(t, s))).toEqual([1, 1, 4, 4]);
    const wider = settings({}, { maxConcurrentSendsPerTarget: 16 });
    expect(wider.targets.map((t) => sendsInFlightFor(t, wider))).toEqual([1, 1, 16, 16]);
  });

  it("a target's own maxConcurrentSends overrides, within 1..256", () => {
    const s = settings({ maxConcurrentSends: 3 });
    expect(sendsInFlightFor(s.targets[0]!, s)).toBe(3);
    expect(() => settings({ maxConcurrentSends: 0 })).toThrow();
  });
});
