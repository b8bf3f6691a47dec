// How long the poll loop waits after a failed poll (pure): the one backoff formula (@sef/retry) with a policy per kind
// of failure. A 400 is a configuration problem and is retried slowly, a throttle honours its Retry-After (bounded),
// anything else backs off exponentially from the poll interval. The poll loop is the IMDS requests' only retry owner.
import { retryDelayMs, type RetryPolicy } from "@sef/retry/policy.js";
import type { ImdsFailureKind } from "../imds/errors.js";

/** The longest wait after a 400 (a wrong api-version or header): between half of it and all of it. */
export const badRequestRetryMs = 60_000;
export const maxPollBackoffMs = 30_000;
/** While discovery has no endpoint a poll sends nothing; polling resumes within this long once one is found. */
export const noEndpointMaxBackoffMs = 5_000;
/**
 * Growth per failed poll. A poll is one request (the IMDS client retries nothing), so the wait grows by half per
 * request: a blip of a second or two is over before the waits are long, a long outage still reaches the cap in a minute.
 */
export const pollBackoffMultiplier = 1.5;
/** Instance metadata while the VM identity is still unknown: retried after 1–2 s, doubling up to 15–30 s. */
export const identityRetryPolicy: RetryPolicy = { initialDelayMs: 2_000, maxDelayMs: 30_000, multiplier: 2 };

/** The policy after a failed poll of `kind`: never waits less than half a poll interval, never more than the cap. */
export function pollRetryPolicy(kind: ImdsFailureKind, pollIntervalMs: number): RetryPolicy {
  if (kind === "bad_request")
    return { initialDelayMs: badRequestRetryMs, maxDelayMs: badRequestRetryMs, multiplier: 1 };
  const capMs = kind === "no_endpoint" ? noEndpointMaxBackoffMs : maxPollBackoffMs;
  return {
    initialDelayMs: pollIntervalMs,
    maxDelayMs: Math.max(capMs, pollIntervalMs),
    multiplier: pollBackoffMultiplier,
  };
}

/**
 * The wait after the `consecutiveFailures`-th failed poll in a row; `random` in [0, 1) picks the jitter. Only a 429's
 * Retry-After is honoured (within the policy: 0 waits the poll interval, an hour waits the cap).
 */
export function pollBackoffMs(
  kind: ImdsFailureKind,
  consecutiveFailures: number,
  pollIntervalMs: number,
  retryAfterMs: number | undefined,
  random: number,
): number {
  const hintMs = kind === "throttled" ? retryAfterMs : undefined;
  return retryDelayMs(pollRetryPolicy(kind, pollIntervalMs), consecutiveFailures, hintMs, random);
}
