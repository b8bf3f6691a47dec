// The one retry loop of a request (agent and fleet service): attempts until one is not to be retried, with the policy's
// backoff between them (a server's hint bounded by it), waits that end at once when the caller's signal aborts, on the
// caller's clock, and an optional cap on attempts and deadline. Whoever runs it is the request's only retry owner.
import { retryDelayMs, type RetryPolicy } from "./policy.js";

/** The part of a clock the loop needs: the monotonic reading and an abortable sleep (agent and fleet clocks fit). */
export interface RetryClock {
  monotonicMs(): number;
  /** Resolves after `ms`; rejects (or resolves early) when `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** How one attempt ended: its value, or what it threw. */
export type Settled<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: unknown };

/** Whether an attempt is tried again, and the server's hint (Retry-After, in ms) when it gave one. */
export type Verdict = { readonly retry: false } | { readonly retry: true; readonly afterMs?: number };

export interface RetryOptions<T> {
  readonly policy: RetryPolicy;
  readonly clock: RetryClock;
  /** Ends the loop: no attempt starts and a wait ends once it aborts (an attempt in flight is the caller's to cut). */
  readonly signal?: AbortSignal;
  /** Attempts in all, the first included (default: no limit). */
  readonly maxAttempts?: number;
  /** Monotonic time past which no attempt starts: the last wait is cut to end at it (default: none). */
  readonly deadlineMs?: number;
  /** Whether an attempt's value or error is retried (default: every error is, no value is). */
  readonly verdict?: (settled: Settled<T>, attempt: number) => Verdict;
  /** Told before each wait (logs, metrics). */
  readonly onRetry?: (settled: Settled<T>, attempt: number, delayMs: number) => void;
  /** Picks the jitter, in [0, 1) (default Math.random). */
  readonly random?: () => number;
}

/**
 * How the loop ended: `settled` (an attempt the verdict did not retry), `exhausted` (attempts or deadline spent) or
 * `aborted` (the signal); `last` is the last attempt's outcome (none when aborted before the first).
 */
export interface RetryEnd<T> {
  readonly end: "settled" | "exhausted" | "aborted";
  readonly last: Settled<T> | undefined;
  readonly attempts: number;
}

const retryErrors: NonNullable<RetryOptions<unknown>["verdict"]> = (settled) =>
  settled.ok ? { retry: false } : { retry: true };

/** Runs `attempt` (1-based number) until the verdict stops it, the attempts or the deadline run out, or the signal aborts. */
export async function retryAttempts<T>(
  attempt: (attemptNumber: number) => Promise<T>,
  options: RetryOptions<T>,
): Promise<RetryEnd<T>> {
  const {
    policy,
    clock,
    signal,
    maxAttempts = Number.POSITIVE_INFINITY,
    deadlineMs,
    onRetry,
    random = Math.random,
  } = options;
  const verdict = options.verdict ?? retryErrors;
  let last: Settled<T> | undefined;
  for (let attemptNumber = 1; ; attemptNumber++) {
    if (signal?.aborted) return { end: "aborted", last, attempts: attemptNumber - 1 };
    last = await attempt(attemptNumber).then(
      (value): Settled<T> => ({ ok: true, value }),
      (error: unknown): Settled<T> => ({ ok: false, error }),
    );
    const decided = verdict(last, attemptNumber);
    if (!decided.retry) return { end: "settled", last, attempts: attemptNumber };
    if (signal?.aborted) return { end: "aborted", last, attempts: attemptNumber };
    const nowMs = clock.monotonicMs();
    if (attemptNumber >= maxAttempts || (deadlineMs !== undefined && nowMs >= deadlineMs))
      return { end: "exhausted", last, attempts: attemptNumber };
    const backoffMs = retryDelayMs(policy, attemptNumber, decided.afterMs, random());
    const delayMs = deadlineMs === undefined ? backoffMs : Math.min(backoffMs, deadlineMs - nowMs);
    onRetry?.(last, attemptNumber, delayMs);
    await clock.sleep(delayMs, signal).catch(() => undefined);
  }
}

/**
 * The loop for a request that either answers or throws: resolves with the first value the verdict accepts; throws the
 * last attempt's error when it was not retried or the attempts ran out, and the signal's reason when aborted first.
 */
export async function retry<T>(attempt: (attemptNumber: number) => Promise<T>, options: RetryOptions<T>): Promise<T> {
  const { last } = await retryAttempts(attempt, options);
  // No attempt: the loop ends so only when the signal had aborted, and an aborted signal always has a reason.
  if (last === undefined) throw options.signal?.reason;
  if (!last.ok) throw last.error;
  return last.value;
}
