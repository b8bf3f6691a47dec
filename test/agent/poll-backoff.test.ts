// Poll backoff while discovery has no IMDS endpoint: short enough that polling resumes soon after one is found.
import { describe, expect, it } from "vitest";
import { maxPollBackoffMs, noEndpointMaxBackoffMs, pollBackoffMs } from "../../src/agent/pipeline/poll-backoff.js";

describe("pollBackoffMs", () => {
  it("caps the wait at 5 s while no endpoint is known, and at 30 s for network errors", () => {
    expect([1, 2, 3, 4, 10].map((n) => pollBackoffMs("no_endpoint", n, 1000))).toEqual([1000, 2000, 4000, noEndpointMaxBackoffMs, noEndpointMaxBackoffMs]);
    expect(pollBackoffMs("network_error", 10, 1000)).toBe(maxPollBackoffMs);
    expect(pollBackoffMs("no_endpoint", 10, 10_000)).toBe(10_000); // never shorter than the poll interval
  });
});
