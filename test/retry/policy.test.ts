// The one backoff formula (@sef/retry), with injected randomness.
import { describe, expect, it } from "vitest";
import { retryDelayMs, defaultRetryPolicy } from "../../src/retry/policy.js";

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
    expect(retryDelayMs(policy, 1, 0, 0)).toBe(100);
    expect(retryDelayMs(policy, 7, 1, 0)).toBe(100);
    expect(retryDelayMs(policy, 1, 999_999, 0)).toBe(5000);
  });
  it("spreads a server hint over [hint, 1.5 × hint], never shorter and never past the maximum", () => {
    expect(retryDelayMs(policy, 1, 2000, 0.999999)).toBe(3000);
    expect(retryDelayMs(policy, 1, 2000, 0.5)).toBe(2500);
    expect(retryDelayMs(policy, 1, 0, 0.999999)).toBe(150);
    expect(retryDelayMs(policy, 1, 4000, 0.999999)).toBe(5000);
    // A thousand agents told "Retry-After: 2" at once come back spread over a second, not in one instant.
    const delays = Array.from({ length: 1000 }, (_, i) => retryDelayMs(policy, 1, 2000, i / 1000));
    expect(Math.min(...delays)).toBe(2000);
    expect(Math.max(...delays)).toBeGreaterThanOrEqual(2990);
    expect(new Set(delays.map((d) => Math.floor(d / 100))).size).toBe(10);
  });
  it("has sane defaults", () => {
    expect(defaultRetryPolicy.maxDelayMs).toBeGreaterThan(defaultRetryPolicy.initialDelayMs);
  });
});
