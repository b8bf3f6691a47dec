// Injectable time (the agent's and the testbed's): production uses the real clocks; tests pass a fake one so logic
// never waits on real timers. The wall clock only stamps records; every interval, deadline and backoff is monotonic.
import { performance } from "node:perf_hooks";

export interface Clock {
  /** Milliseconds since the Unix epoch (wall clock: may step back or forward; only for stamping records). */
  now(): number;
  /** Milliseconds on a monotonic clock from an arbitrary origin (never steps): for intervals and deadlines. */
  monotonicMs(): number;
  /** Resolves after `ms`, or rejects with the signal's reason when aborted. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  monotonicMs: () => performance.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const timer = setTimeout(
        () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        },
        Math.max(0, ms),
      );
      const onAbort = (): void => {
        clearTimeout(timer);
        reject(signal?.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
    }),
};
