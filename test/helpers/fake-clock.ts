// The one fake Clock of the tests. Time moves only when the test calls `advance` (sleepers wake in deadline order, and
// the promise chains they start run before time moves on) — or, with `sleepsPassAtOnce`, whenever something sleeps.
// Its monotonic reading has its own origin, far from the wall reading, so code that mixes the two fails a test.
import type { Clock } from "../../src/runtime/clock.js";

interface Sleeper {
  readonly wakeAtMs: number;
  readonly order: number;
  readonly resolve: () => void;
}

/** Lets pending promise callbacks and I/O callbacks run. */
export async function flushAsync(rounds = 5): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/** Where the monotonic reading starts: not 0 (a forgotten origin) and nowhere near a wall-clock reading. */
export const fakeMonotonicOriginMs = 86_400_000;

export interface FakeClockOptions {
  /** Each sleep yields to the event loop, then moves time by its length at once (a loop that only sleeps runs free). */
  readonly sleepsPassAtOnce?: boolean;
}

export class FakeClock implements Clock {
  /** Time moved since the start (by `advance`, `jump` or a sleep passing at once); both readings follow it. */
  private elapsedMs = 0;
  private wallOffsetMs = 0;
  private sleepers: Sleeper[] = [];
  private counter = 0;

  constructor(
    private readonly startMs = Date.UTC(2024, 0, 1),
    private readonly options: FakeClockOptions = {},
  ) {}

  /** Wall time: the start plus the time moved plus any `stepWall` offsets. */
  now(): number {
    return this.startMs + this.elapsedMs + this.wallOffsetMs;
  }

  monotonicMs(): number {
    return fakeMonotonicOriginMs + this.elapsedMs;
  }

  /** Steps the wall clock only (NTP, an operator): the monotonic clock and the sleepers do not move. */
  stepWall(ms: number): void {
    this.wallOffsetMs += ms;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (this.options.sleepsPassAtOnce) return this.passAtOnce(ms, signal);
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const sleeper: Sleeper = {
        wakeAtMs: this.elapsedMs + Math.max(0, ms),
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

  private async passAtOnce(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) throw signal.reason;
    // Yield to I/O and timers, so a loop that only ever sleeps on this clock cannot starve the test driving it.
    await new Promise((resolve) => setImmediate(resolve));
    this.elapsedMs += Math.max(0, ms);
  }

  /** Number of sleeps waiting to be woken. */
  get pendingSleeps(): number {
    return this.sleepers.length;
  }

  /** Moves time forward by `ms`, waking each due sleeper at its own deadline (earliest first) and letting it react. */
  async advance(ms: number): Promise<void> {
    const targetMs = this.elapsedMs + ms;
    await flushAsync();
    for (;;) {
      const due = this.sleepers
        .filter((s) => s.wakeAtMs <= targetMs)
        .sort((a, b) => a.wakeAtMs - b.wakeAtMs || a.order - b.order)[0];
      if (!due) break;
      this.sleepers = this.sleepers.filter((s) => s !== due);
      this.elapsedMs = Math.max(this.elapsedMs, due.wakeAtMs);
      due.resolve();
      await flushAsync();
    }
    this.elapsedMs = targetMs;
  }

  /** Sets the time without waking anyone (e.g. a suspended VM); the next `advance` wakes what is due. */
  jump(ms: number): void {
    this.elapsedMs += ms;
  }
}

/** A fake clock whose sleeps pass at once (what a drain or a retry loop needs to run to its end without real waits). */
export function instantClock(startMs = Date.parse("2024-05-01T12:00:00.000Z")): FakeClock {
  return new FakeClock(startMs, { sleepsPassAtOnce: true });
}
