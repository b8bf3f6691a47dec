// Keeps IMDS requests under its limit (5 per second per VM): at most `maxRequests` starts in any `windowMs`
// (measured on the monotonic clock: a wall-clock step never stalls polling).
import type { Clock } from "@sef/runtime/clock.js";

export class SlidingWindowRateLimiter {
  private readonly starts: number[] = [];
  private queue: Promise<void> = Promise.resolve();
  /** Callers waiting in `acquire` (a free slot is taken at once only when nobody waits ahead). */
  private waiting = 0;

  constructor(
    private readonly clock: Clock,
    private readonly maxRequests = 5,
    private readonly windowMs = 1000,
  ) {}

  /** Milliseconds to wait before another request may start at `nowMs` (pure given the recorded starts). */
  delayBeforeNext(nowMs: number): number {
    while (this.starts.length > 0 && nowMs - this.starts[0]! >= this.windowMs) this.starts.shift();
    if (this.starts.length < this.maxRequests) return 0;
    return this.starts[0]! + this.windowMs - nowMs;
  }

  /** Takes a slot now when one is free and nobody waits ahead (the poll's usual case: no promise, no timer). */
  tryAcquire(): boolean {
    if (this.waiting > 0) return false;
    const nowMs = this.clock.monotonicMs();
    if (this.delayBeforeNext(nowMs) > 0) return false;
    this.starts.push(nowMs);
    return true;
  }

  /** Waits for a slot and takes it. Callers are served in order. */
  acquire(signal?: AbortSignal): Promise<void> {
    this.waiting += 1;
    const turn = this.queue.then(async () => {
      for (;;) {
        const delayMs = this.delayBeforeNext(this.clock.monotonicMs());
        if (delayMs <= 0) break;
        await this.clock.sleep(delayMs, signal);
      }
      this.starts.push(this.clock.monotonicMs());
    });
    this.queue = turn
      .catch(() => undefined)
      .finally(() => {
        this.waiting -= 1;
      });
    return turn;
  }
}
