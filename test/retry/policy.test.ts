// The one backoff formula (@sef/retry), with injected randomness.
import { describe, expect, it } from "vitest";
import { retryDelayMs, defaultRetryPolicy } from "../../src/retry/policy.js";
import { parseRetryAfterMs, retryAfterFromHeaders } from "../../src/retry/retry-after.js";

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
  it("takes a negative hint for none: the exponential backoff", () => {
    expect(retryDelayMs(policy, 3, -1, 1)).toBe(400);
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

describe("Retry-After values", () => {
  const nowMs = Date.parse("2024-05-01T12:00:00.000Z");
  const headers = (h: Record<string, string>) => (name: string) => h[name];
  it("reads seconds with or without a fraction, around spaces; anything else with digits in it is not a number of seconds", () => {
    expect(parseRetryAfterMs(" 5 ", nowMs)).toBe(5000);
    expect(parseRetryAfterMs("1.25", nowMs)).toBe(1250);
    expect(parseRetryAfterMs(["2", "9"], nowMs)).toBe(2000);
    expect(parseRetryAfterMs("5s", nowMs)).toBeUndefined();
    expect(parseRetryAfterMs("x5", nowMs)).toBeUndefined();
  });
  it("reads the millisecond headers around spaces and with a fraction (rounded up), and only as numbers", () => {
    expect(retryAfterFromHeaders(headers({ "retry-after-ms": " 40 " }), nowMs)).toBe(40);
    expect(retryAfterFromHeaders(headers({ "retry-after-ms": "12.25" }), nowMs)).toBe(13);
    expect(retryAfterFromHeaders(headers({ "x-ms-retry-after-ms": "40ms", "retry-after": "3" }), nowMs)).toBe(3000);
  });
});
