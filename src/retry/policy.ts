// The one backoff formula (pure) of every sef retry: exponential backoff with equal jitter, capped; a server's hint
// wins, bounded by the policy and spread by a jitter of its own so that a fleet throttled at one moment does not come
// back at one moment. The retry loop (retry.ts) and the loops that schedule themselves (drainer, poll loop) use it.

export interface RetryPolicy {
  /** First backoff, in milliseconds. */
  initialDelayMs: number;
  /** Largest backoff and largest honoured server hint, in milliseconds. */
  maxDelayMs: number;
  /** Growth per consecutive failure. */
  multiplier: number;
}

export const defaultRetryPolicy: RetryPolicy = { initialDelayMs: 500, maxDelayMs: 60_000, multiplier: 2 };

/** A server hint is honoured as a lower bound and spread over up to this fraction more (0.5: a 10 s hint → 10–15 s). */
export const hintJitterFraction = 0.5;

/**
 * Delay before retry number `attempt` (1 = first retry). `random` in [0, 1) picks the jitter
 * (injected so tests are exact). A server hint (Retry-After) is clamped to [`initialDelayMs`, `maxDelayMs`]:
 * a hint of 0 (or a date in the past) never turns a retry loop into a busy loop, a huge one never parks it. The hint is never cut short, but
 * is lengthened by up to `hintJitterFraction` of itself (still at most `maxDelayMs`): thousands of agents answered
 * "Retry-After: 5" in the same second would otherwise all retry in the same second, and be throttled again together.
 */
export function retryDelayMs(
  policy: RetryPolicy,
  attempt: number,
  retryAfterMs: number | undefined,
  random: number,
): number {
  if (retryAfterMs !== undefined && retryAfterMs >= 0) {
    const hinted = Math.min(Math.max(retryAfterMs, policy.initialDelayMs), policy.maxDelayMs);
    return Math.min(Math.round(hinted + hinted * hintJitterFraction * random), policy.maxDelayMs);
  }
  const ceiling = Math.min(policy.maxDelayMs, policy.initialDelayMs * policy.multiplier ** Math.max(0, attempt - 1));
  // "Equal jitter": half fixed, half random, so retries never collapse to zero delay.
  return Math.round(ceiling / 2 + (ceiling / 2) * random);
}
