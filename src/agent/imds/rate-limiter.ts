// Keeps IMDS requests under its limit (5 per second per VM): at most `maxRequests` starts in any `windowMs`
// (measured on the monotonic clock: a wall-clock step never stalls polling).
import type { Clock } from "../util/clock.js";

export class SlidingWindowRateLimiter {
  private readonly starts: number[] = [];
  private queue: Promise<void> = Promise.resolve();

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

  /** Waits for a slot and takes it. Callers are served in order. */
  acquire(signal?: AbortSignal): Promise<void> {
    const turn = this.queue.then(async () => {
      for (;;) {
        const delayMs = this.delayBeforeNext(this.clock.monotonicMs());
        if (delayMs <= 0) break;
        await this.clock.sleep(delayMs, signal);
      }
      this.starts.push(this.clock.monotonicMs());
    });
    this.queue = turn.catch(() => undefined);
    return turn;
  }
}
