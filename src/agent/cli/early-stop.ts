// A stop signal that arrives while `sef run` is still loading its modules (before the agent can listen) is kept
// here, so start-up ends as a clean stop (exit 0) instead of a death by signal. No imports: it loads first.

let requested = false;
const onSignal = (): void => {
  requested = true;
};

/** Starts keeping SIGTERM/SIGINT (the entry point calls it before loading anything else). */
export function armEarlyStop(): void {
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
}

/** Hands over to the real listener: whether a signal already arrived. */
export function takeEarlyStop(): boolean {
  process.off("SIGTERM", onSignal);
  process.off("SIGINT", onSignal);
  return requested;
}
