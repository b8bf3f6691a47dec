// SendSlots: at most N requests to a target at once, the rest wait in order; a waiter whose partition closes leaves
// the queue without sending.
import { describe, expect, it } from "vitest";
import { SendSlots } from "../../src/fleet/targets/send-slots.js";

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
