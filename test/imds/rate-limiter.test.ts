// The IMDS rate limiter's window is on the monotonic clock: a wall-clock step back of an hour never stalls polling.
import { describe, expect, it } from "vitest";
import { SlidingWindowRateLimiter } from "../../src/agent/imds/rate-limiter.js";
import { FakeClock } from "../helpers/fake-clock.js";

describe("SlidingWindowRateLimiter", () => {
  it("admits 5 starts per second and ignores wall-clock steps", async () => {
    const clock = new FakeClock();
    const limiter = new SlidingWindowRateLimiter(clock, 5, 1000);
    for (let i = 0; i < 5; i++) await limiter.acquire();
    expect(limiter.delayBeforeNext(clock.monotonicMs())).toBe(1000);
    clock.stepWall(-3_600_000);
    await clock.advance(1000);
    expect(limiter.delayBeforeNext(clock.monotonicMs())).toBe(0);
    clock.stepWall(+7_200_000);
    await limiter.acquire();
    expect(limiter.delayBeforeNext(clock.monotonicMs())).toBe(0);
  });
});
