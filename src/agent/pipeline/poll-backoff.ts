// How long the poll loop waits after a failed poll (pure): 400 is a configuration problem and is retried slowly,
// a throttle honours Retry-After, anything else backs off exponentially from the poll interval.
import type { ImdsFailureKind } from "../imds/errors.js";

export const badRequestRetryMs = 60_000;
export const maxPollBackoffMs = 30_000;
/** While discovery has no endpoint a poll sends nothing; polling resumes within this long once one is found. */
export const noEndpointMaxBackoffMs = 5_000;

export function pollBackoffMs(kind: ImdsFailureKind, consecutiveFailures: number, pollIntervalMs: number, retryAfterMs?: number): number {
  if (kind === "bad_request") return badRequestRetryMs;
  if (kind === "no_endpoint") return Math.min(pollIntervalMs * 2 ** Math.max(0, consecutiveFailures - 1), Math.max(noEndpointMaxBackoffMs, pollIntervalMs));
  if (kind === "throttled" && retryAfterMs !== undefined) return Math.min(Math.max(retryAfterMs, pollIntervalMs), maxPollBackoffMs);
  return Math.min(pollIntervalMs * 2 ** Math.max(0, consecutiveFailures - 1), Math.max(maxPollBackoffMs, pollIntervalMs));
}
