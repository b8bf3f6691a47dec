// The one retry loop (@sef/retry) on a fake clock: attempts until the verdict stops it, waits of the policy between
// them (a server's hint bounded: 0 never hammers, an hour waits the cap), attempts and a deadline that end it, and a
// signal that ends a wait at once.
import { describe, expect, it } from "vitest";
import { retry, retryAttempts, type Settled } from "../../src/retry/retry.js";
import { FakeClock, flushAsync } from "../helpers/fake-clock.js";

const policy = { initialDelayMs: 100, maxDelayMs: 1000, multiplier: 2 };
/** The longest jitter: every wait is the whole backoff (100, 200, 400 … ms), a hint is spread to 1.5 × itself. */
const whole = () => 0.999999;

/** Runs the loop on a fake clock, recording when each attempt started and each wait the loop announced. */
function recorder(clock: FakeClock) {
  const startedAtMs: number[] = [];
  const waitsMs: number[] = [];
  const origin = clock.monotonicMs();
  return {
    startedAtMs,
    waitsMs,
    attempt: (answer: (n: number) => Promise<string>) => (n: number) => {
      startedAtMs.push(clock.monotonicMs() - origin);
      return answer(n);
    },
    onRetry: (_settled: Settled<string>, _attempt: number, delayMs: number) => void waitsMs.push(delayMs),
  };
}

/** Lets the loop run, moving the fake clock by each wait it sleeps, until `done` settles. */
async function drive<T>(clock: FakeClock, done: Promise<T>): Promise<T> {
  let settled = false;
  void done.finally(() => (settled = true)).catch(() => undefined);
  for (let i = 0; i < 100 && !settled; i++) {
    await flushAsync();
    await clock.advance(1000);
  }
  return done;
}

describe("retry", () => {
  it("retries a failing attempt with the policy's backoff until it answers", async () => {
    const clock = new FakeClock();
    const r = recorder(clock);
    const value = await drive(
      clock,
      retry(
        r.attempt(async (n) => {
          if (n < 4) throw new Error(`fail ${n}`);
          return "ok";
        }),
        { policy, clock, random: whole, onRetry: r.onRetry },
      ),
    );
    expect(value).toBe("ok");
    expect(r.waitsMs).toEqual([100, 200, 400]);
    expect(r.startedAtMs).toEqual([0, 100, 300, 700]);
  });

  it("never hammers on Retry-After: 0 and never parks on a huge hint: both are bounded by the policy", async () => {
    const clock = new FakeClock();
    const r = recorder(clock);
    const hints = [0, 3_600_000, undefined];
    const end = await drive(
      clock,
      retryAttempts(
        r.attempt(async (n) => (n <= hints.length ? "busy" : "done")),
        {
          policy,
          clock,
          random: () => 0,
          verdict: (settled, n) =>
            settled.ok && settled.value === "busy" ? { retry: true, afterMs: hints[n - 1] } : { retry: false },
          onRetry: r.onRetry,
        },
      ),
    );
    expect(end).toMatchObject({ end: "settled", attempts: 4, last: { ok: true, value: "done" } });
    // Retry-After 0 waits the first backoff, an hour waits the cap, no hint: the exponential backoff (3rd: 400 → 200–400).
    expect(r.waitsMs).toEqual([100, 1000, 200]);
  });

  it("stops at once on an answer the verdict does not retry (a value by default, or an error it refuses)", async () => {
    const clock = new FakeClock();
    await expect(retry(async () => "at once", { policy, clock })).resolves.toBe("at once");
    const refused = new Error("400 bad request");
    const end = await retryAttempts(async () => Promise.reject(refused), {
      policy,
      clock,
      verdict: () => ({ retry: false }),
    });
    expect(end).toEqual({ end: "settled", last: { ok: false, error: refused }, attempts: 1 });
    expect(clock.pendingSleeps).toBe(0);
  });

  it("gives up after maxAttempts with the last error", async () => {
    const clock = new FakeClock();
    const r = recorder(clock);
    const run = retry(
      r.attempt(async (n) => Promise.reject(new Error(`fail ${n}`))),
      { policy, clock, random: whole, maxAttempts: 3, onRetry: r.onRetry },
    );
    await expect(drive(clock, run)).rejects.toThrow("fail 3");
    expect(r.startedAtMs).toEqual([0, 100, 300]);
  });

  it("starts no attempt past the deadline: the last wait ends at it, and the next failure ends the loop", async () => {
    const clock = new FakeClock();
    const r = recorder(clock);
    const deadlineMs = clock.monotonicMs() + 450;
    const end = await drive(
      clock,
      retryAttempts(
        r.attempt(async () => Promise.reject(new Error("down"))),
        { policy, clock, random: whole, deadlineMs, onRetry: r.onRetry },
      ),
    );
    expect(end.end).toBe("exhausted");
    expect(r.waitsMs).toEqual([100, 200, 150]);
    expect(r.startedAtMs).toEqual([0, 100, 300, 450]);
  });

  it("ends a wait at once when the signal aborts, and starts nothing after it", async () => {
    const clock = new FakeClock();
    const r = recorder(clock);
    const stop = new AbortController();
    const run = retryAttempts(
      r.attempt(async () => Promise.reject(new Error("down"))),
      { policy, clock, random: whole, signal: stop.signal, onRetry: r.onRetry },
    );
    await clock.advance(100);
    await flushAsync();
    expect(r.startedAtMs).toEqual([0, 100]);
    stop.abort(new Error("stopping"));
    const end = await run;
    expect(end).toMatchObject({ end: "aborted", attempts: 2, last: { ok: false } });
    expect(clock.pendingSleeps).toBe(0);
    await expect(retry(async () => "never", { policy, clock, signal: stop.signal })).rejects.toThrow("stopping");
    const plain = new AbortController();
    plain.abort();
    await expect(retry(async () => "never", { policy, clock, signal: plain.signal })).rejects.toMatchObject({
      name: "AbortError",
    });
  });

  it("an abort while an attempt is out ends the loop with that attempt: no retry announced, no wait begun", async () => {
    const clock = new FakeClock();
    const r = recorder(clock);
    const stop = new AbortController();
    const end = await retryAttempts(
      r.attempt(async () => {
        stop.abort(new Error("stopping"));
        throw new Error("cut short");
      }),
      { policy, clock, random: whole, signal: stop.signal, onRetry: r.onRetry },
    );
    expect(end).toMatchObject({ end: "aborted", attempts: 1, last: { ok: false, error: new Error("cut short") } });
    expect(r.waitsMs).toEqual([]);
    expect(clock.pendingSleeps).toBe(0);
  });
});
