// A fake Clock for tests: time moves only when the test calls `advance`; sleepers wake in deadline order, and the
// promise chains they start get to run (and schedule their next sleep) before time moves on.
import type { Clock } from "../../src/agent/util/clock.js";

interface Sleeper {
  readonly wakeAtMs: number;
  readonly order: number;
  readonly resolve: () => void;
}

/** Lets pending promise callbacks and I/O callbacks run. */
export async function flushAsync(rounds = 5): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

export class FakeClock implements Clock {
  private nowMs: number;
  private sleepers: Sleeper[] = [];
  private counter = 0;

  constructor(startMs = Date.UTC(2024, 0, 1)) {
    this.nowMs = startMs;
  }

  private wallOffsetMs = 0;

  /** Wall time: the monotonic time plus any `stepWall` offsets. */
  now(): number {
    return this.nowMs + this.wallOffsetMs;
  }

  monotonicMs(): number {
    return this.nowMs;
  }

  /** Steps the wall clock only (NTP, an operator): the monotonic clock and the sleepers do not move. */
  stepWall(ms: number): void {
    this.wallOffsetMs += ms;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const sleeper: Sleeper = {
        wakeAtMs: this.nowMs + Math.max(0, ms),
        order: this.counter++,
        resolve: () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        },
      };
      const onAbort = (): void => {
        this.sleepers = this.sleepers.filter((s) => s !== sleeper);
        reject(signal?.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.sleepers.push(sleeper);
    });
  }

  /** Number of sleeps waiting to be woken. */
  get pendingSleeps(): number {
    return this.sleepers.length;
  }

  /** Moves time forward by `ms`, waking each due sleeper at its own deadline (earliest first) and letting it react. */
  async advance(ms: number): Promise<void> {
    const targetMs = this.nowMs + ms;
    await flushAsync();
    for (;;) {
      const due = this.sleepers
        .filter((s) => s.wakeAtMs <= targetMs)
        .sort((a, b) => a.wakeAtMs - b.wakeAtMs || a.order - b.order)[0];
      if (!due) break;
      this.sleepers = this.sleepers.filter((s) => s !== due);
      this.nowMs = Math.max(this.nowMs, due.wakeAtMs);
      due.resolve();
      await flushAsync();
    }
    this.nowMs = targetMs;
  }

  /** Sets the time without waking anyone (e.g. a suspended VM); the next `advance` wakes what is due. */
  jump(ms: number): void {
    this.nowMs += ms;
  }
}
