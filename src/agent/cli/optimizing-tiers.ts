// V8's optimizing compilers (Maglev, TurboFan) for `sef run`: held back from the start, and released for good once the
// outbox holds a backlog worth compiling for. Held, they would only compile module-loading and set-up code (about 26
// functions at start-up) and keep their own code paged in: about 2.7 MB of an idle agent's resident set. A poll a
// second runs well on the interpreter and Sparkplug (V8's baseline compiler, which stays on); a backlog drain of
// thousands of records is what needs optimized code. V8 reads both flags at every tier-up decision, so releasing them
// at run time takes effect at the next hot function.
import { setFlagsFromString } from "node:v8";

/** Records waiting for one sink from which the optimizing compilers are released (a drain of ~40 ms optimized). */
export const backlogForOptimizingTiers = 1000;

let held = false;

/**
 * Records that they are held. main.ts (or the launcher) holds them with `--no-maglev --no-turbofan` before any of the
 * agent's modules load, so this module cannot be the one to set those flags.
 */
export function markOptimizingTiersHeld(): void {
  held = true;
}

/** Turns the optimizing compilers back on; true only for the call that did it. */
export function releaseOptimizingTiers(): boolean {
  if (!held) return false;
  setFlagsFromString("--maglev");
  setFlagsFromString("--turbofan");
  held = false;
  return true;
}

/** True when some sink has at least `threshold` records waiting (`undelivered`: records per sink). */
export function isBacklog(undelivered: Readonly<Record<string, number>>, threshold = backlogForOptimizingTiers): boolean {
  return Object.values(undelivered).some((records) => records >= threshold);
}

/**
 * Checks `undelivered()` now and every `intervalMs` while the compilers are held, releases them at the first backlog
 * and then tells `onRelease`. Returns the function that stops watching. The timer never holds the process open.
 */
export function releaseOptimizingTiersOnBacklog(
  undelivered: () => Record<string, number>,
  onRelease: (undelivered: Record<string, number>) => void,
  intervalMs = 1000,
): () => void {
  let timer: NodeJS.Timeout | undefined;
  const check = (): boolean => {
    if (!held) return true;
    const waiting = undelivered();
    if (!isBacklog(waiting)) return false;
    if (releaseOptimizingTiers()) onRelease(waiting);
    return true;
  };
  if (!check()) {
    timer = setInterval(() => {
      if (check()) clearInterval(timer);
    }, intervalMs);
    timer.unref();
  }
  return () => clearInterval(timer);
}
