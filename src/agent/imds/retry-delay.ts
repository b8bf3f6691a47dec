// The immediate retries of one IMDS call (client.ts): randomized exponential backoff between attempts, on real timers
// (like the request deadlines), ending early when the caller's signal aborts.

/** Wait before retry `attemptNumber` (1 = after the first failure): min × 2^(n-1), randomized ×1–2, at most `maxMs`. */
export function retryDelayMs(attemptNumber: number, minMs: number, maxMs: number, random: () => number = Math.random): number {
  return Math.min(maxMs, Math.round(minMs * 2 ** (attemptNumber - 1) * (1 + random())));
}

/** Resolves after `ms`, or as soon as `signal` aborts (never rejects: the caller looks at the signal). */
export function sleepUnlessAborted(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}
