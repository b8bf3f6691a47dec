// How long the poll loop waits after each kind of failed poll (the one backoff formula of @sef/retry, a policy per
// kind): a 400 slowly, a 429 at least as long as its Retry-After says (never shorter than the poll interval, never past
// the cap), everything else exponentially (×1.5 per failed poll) from the poll interval; each with its jitter.
import { describe, expect, it } from "vitest";
import {
  badRequestRetryMs,
  maxPollBackoffMs,
  noEndpointMaxBackoffMs,
  pollBackoffMs,
} from "../../src/agent/pipeline/poll-backoff.js";
import type { ImdsFailureKind } from "../../src/agent/imds/errors.js";

const lowest = 0;
const highest = 0.999999;

describe("pollBackoffMs", () => {
  it.each<[string, ImdsFailureKind, number, number, number | undefined, number, number]>([
    // name, kind, consecutive failures, poll interval, Retry-After, shortest wait, longest wait
    ["400 at once, whatever else", "bad_request", 1, 1000, undefined, badRequestRetryMs / 2, badRequestRetryMs],
    ["400 after many, with a hint", "bad_request", 12, 1000, 5, badRequestRetryMs / 2, badRequestRetryMs],
    ["429 honours Retry-After", "throttled", 1, 1000, 7000, 7000, 10_500],
    ["429 honours Retry-After whatever the failure count", "throttled", 9, 1000, 3000, 3000, 4500],
    ["429 Retry-After under the interval waits the interval", "throttled", 1, 1000, 200, 1000, 1500],
    ["429 Retry-After 0 waits the interval", "throttled", 3, 1000, 0, 1000, 1500],
    ["429 Retry-After past the cap waits the cap", "throttled", 1, 1000, 600_000, maxPollBackoffMs, maxPollBackoffMs],
    ["429 without Retry-After backs off: 1st", "throttled", 1, 1000, undefined, 500, 1000],
    ["429 without Retry-After backs off: 3rd", "throttled", 3, 1000, undefined, 1125, 2250],
    [
      "429 without Retry-After backs off: capped",
      "throttled",
      10,
      1000,
      undefined,
      maxPollBackoffMs / 2,
      maxPollBackoffMs,
    ],
    ["500 backs off: 2nd", "http_error", 2, 1000, undefined, 750, 1500],
    ["500 ignores a Retry-After", "http_error", 1, 1000, 20_000, 500, 1000],
    ["timeout backs off: 4th", "timeout", 4, 400, undefined, 675, 1350],
    ["network error capped", "network_error", 10, 1000, undefined, maxPollBackoffMs / 2, maxPollBackoffMs],
    ["a poll interval past the cap is kept", "network_error", 10, 60_000, undefined, 30_000, 60_000],
    ["no endpoint: 2nd", "no_endpoint", 2, 1000, undefined, 750, 1500],
    [
      "no endpoint: capped at 5 s",
      "no_endpoint",
      10,
      1000,
      undefined,
      noEndpointMaxBackoffMs / 2,
      noEndpointMaxBackoffMs,
    ],
    ["no endpoint: the poll interval when it is longer", "no_endpoint", 10, 10_000, undefined, 5_000, 10_000],
  ])("%s", (_name, kind, failures, pollIntervalMs, retryAfterMs, shortestMs, longestMs) => {
    expect(pollBackoffMs(kind, failures, pollIntervalMs, retryAfterMs, lowest)).toBe(shortestMs);
    expect(pollBackoffMs(kind, failures, pollIntervalMs, retryAfterMs, highest)).toBe(longestMs);
  });
});
