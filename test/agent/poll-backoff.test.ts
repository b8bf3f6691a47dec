// How long the poll loop waits after each kind of failed poll: a 400 slowly, a 429 as long as its Retry-After says
// (never shorter than the poll interval, never past the cap), everything else exponentially from the poll interval.
import { describe, expect, it } from "vitest";
import { badRequestRetryMs, maxPollBackoffMs, noEndpointMaxBackoffMs, pollBackoffMs } from "../../src/agent/pipeline/poll-backoff.js";
import type { ImdsFailureKind } from "../../src/agent/imds/errors.js";

describe("pollBackoffMs", () => {
  it.each<[string, ImdsFailureKind, number, number, number | undefined, number]>([
    // name, kind, consecutive failures, poll interval, Retry-After, expected wait
    ["400 at once, whatever else", "bad_request", 1, 1000, undefined, badRequestRetryMs],
    ["400 after many, with a hint", "bad_request", 12, 1000, 5, badRequestRetryMs],
    ["429 honours Retry-After", "throttled", 1, 1000, 7000, 7000],
    ["429 honours Retry-After whatever the failure count", "throttled", 9, 1000, 3000, 3000],
    ["429 Retry-After under the interval waits the interval", "throttled", 1, 1000, 200, 1000],
    ["429 Retry-After 0 waits the interval", "throttled", 3, 1000, 0, 1000],
    ["429 Retry-After past the cap waits the cap", "throttled", 1, 1000, 600_000, maxPollBackoffMs],
    ["429 without Retry-After backs off: 1st", "throttled", 1, 1000, undefined, 1000],
    ["429 without Retry-After backs off: 3rd", "throttled", 3, 1000, undefined, 4000],
    ["429 without Retry-After backs off: capped", "throttled", 10, 1000, undefined, maxPollBackoffMs],
    ["500 backs off: 2nd", "http_error", 2, 1000, undefined, 2000],
    ["500 ignores a Retry-After", "http_error", 1, 1000, 20_000, 1000],
    ["timeout backs off: 4th", "timeout", 4, 500, undefined, 4000],
    ["network error capped", "network_error", 10, 1000, undefined, maxPollBackoffMs],
    ["a poll interval past the cap is kept", "network_error", 10, 60_000, undefined, 60_000],
    ["no endpoint: 2nd", "no_endpoint", 2, 1000, undefined, 2000],
    ["no endpoint: capped at 5 s", "no_endpoint", 10, 1000, undefined, noEndpointMaxBackoffMs],
    ["no endpoint: never shorter than the poll interval", "no_endpoint", 10, 10_000, undefined, 10_000],
  ])("%s", (_name, kind, failures, pollIntervalMs, retryAfterMs, expectedMs) => {
    expect(pollBackoffMs(kind, failures, pollIntervalMs, retryAfterMs)).toBe(expectedMs);
  });
});
