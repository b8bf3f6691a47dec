// The one retry policy every sink shares (pure): exponential backoff with full jitter, capped; a server's hint wins.

export interface RetryPolicy {
  /** First backoff, in milliseconds. */
  initialDelayMs: number;
  /** Largest backoff and largest honoured server hint, in milliseconds. */
  maxDelayMs: number;
  /** Growth per consecutive failure. */
  multiplier: number;
}

export const defaultRetryPolicy: RetryPolicy = { initialDelayMs: 500, maxDelayMs: 60_000, multiplier: 2 };

/**
 * Delay before retry number `attempt` (1 = first retry). `random` in [0, 1) picks the jitter
 * (injected so tests are exact). A server hint (Retry-After) is clamped to [`initialDelayMs`, `maxDelayMs`]:
 * a hint of 0 (or a date in the past) never turns the drain loop into a busy loop.
 */
export function retryDelayMs(policy: RetryPolicy, attempt: number, retryAfterMs: number | undefined, random: number): number {
  if (retryAfterMs !== undefined && retryAfterMs >= 0) return Math.min(Math.max(retryAfterMs, policy.initialDelayMs), policy.maxDelayMs);
  const ceiling = Math.min(policy.maxDelayMs, policy.initialDelayMs * policy.multiplier ** Math.max(0, attempt - 1));
  // "Equal jitter": half fixed, half random, so retries never collapse to zero delay.
  return Math.round(ceiling / 2 + (ceiling / 2) * random);
}
