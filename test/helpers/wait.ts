// The one polling helper of the tests: waits for a condition on another process, a file or a peer (things that cannot
// signal the test), polling on real time, and fails with what it waited for, after how long, and the caller's detail.

export interface WaitOptions {
  /** How long to wait before failing (default 15 s). */
  readonly timeoutMs?: number;
  /** Pause between probes (default 25 ms). */
  readonly intervalMs?: number;
  /** Appended to the timeout error: the state that would explain why. */
  readonly detail?: () => string;
}

/**
 * Probes until `probe` returns a value other than undefined or false (sync or async) and returns it; throws
 * `timed out waiting for <what>` after `timeoutMs`.
 */
export async function waitFor<T>(
  what: string,
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  options: WaitOptions = {},
): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 15_000;
  const deadlineMs = performance.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (performance.now() > deadlineMs) {
      throw new Error(
        `timed out waiting for ${what} (${timeoutMs} ms)${options.detail ? `\n${options.detail()}` : ""}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 25));
  }
}

/** {@link waitFor} for a yes/no condition. */
export async function waitUntil(predicate: () => boolean, timeoutMs = 15_000, what = "condition"): Promise<void> {
  await waitFor(what, () => predicate() || undefined, { timeoutMs });
}
