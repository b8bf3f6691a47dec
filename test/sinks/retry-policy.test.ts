// The shared retry arithmetic with injected randomness.
import { describe, expect, it } from "vitest";
import { retryDelayMs, defaultRetryPolicy } from "../../src/sinks/retry-policy.js";

describe("retryDelayMs", () => {
  const policy = { initialDelayMs: 100, maxDelayMs: 5000, multiplier: 2 };
  it("grows exponentially with equal jitter", () => {
    expect(retryDelayMs(policy, 1, undefined, 0)).toBe(50);
    expect(retryDelayMs(policy, 1, undefined, 0.999999)).toBe(100);
    expect(retryDelayMs(policy, 3, undefined, 1)).toBe(400);
  });
  it("caps at the maximum", () => {
    expect(retryDelayMs(policy, 30, undefined, 1)).toBe(5000);
  });
  it("lets a server hint win, clamped to [minimum backoff, maximum]", () => {
    expect(retryDelayMs(policy, 1, 2500, 0)).toBe(2500);
    expect(retryDelayMs(policy, 1, 0, 0.5)).toBe(100);
    expect(retryDelayMs(policy, 7, 1, 0.5)).toBe(100);
    expect(retryDelayMs(policy, 1, 999_999, 0)).toBe(5000);
  });
  it("has sane defaults", () => {
    expect(defaultRetryPolicy.maxDelayMs).toBeGreaterThan(defaultRetryPolicy.initialDelayMs);
  });
});
