// SIGTERM/SIGINT for `sef run`, from the first moment (start-up included): the first signal asks the agent to stop
// and arms a hard deadline, so the process ends within shutdownFlushMs + a fixed margin whatever a sink does.
import type { Logger } from "pino";
import { takeEarlyStop } from "./early-stop.js";

/** Time allowed after the flush deadline for the closes (sinks, IMDS client, store, metrics server). */
export const shutdownMarginMs = 3000;

export interface StopSignal {
  /** Whether a stop signal arrived. */
  readonly requested: boolean;
  /** Resolves when a stop signal arrives. */
  readonly arrived: Promise<void>;
  /** Stops listening (the process's default handling returns). */
  dispose(): void;
}

/**
 * Listens for SIGTERM and SIGINT. On the first one: resolves `arrived` and arms a timer that exits the process
 * with `exitCode` after `flushMs` + `shutdownMarginMs` if the orderly stop has not ended it by then.
 */
export function listenForStop(logger: Logger, flushMs: number, exitCode: number): StopSignal {
  let requested = false;
  let resolveArrived: () => void = () => undefined;
  const arrived = new Promise<void>((resolve) => (resolveArrived = resolve));
  const onSignal = (signal: NodeJS.Signals): void => {
    if (requested) return;
    requested = true;
    logger.info({ signal }, "stopping");
    const hardDeadlineMs = flushMs + shutdownMarginMs;
    setTimeout(() => {
      logger.error(
        { afterMs: hardDeadlineMs },
        "shutdown did not finish in time (a sink or peer is not answering); exiting: undelivered records stay in the outbox",
      );
      process.exit(exitCode);
    }, hardDeadlineMs).unref();
    resolveArrived();
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
  // A signal that arrived while the modules were still loading counts as the first one.
  if (takeEarlyStop()) onSignal("SIGTERM");
  return {
    get requested() {
      return requested;
    },
    arrived,
    dispose() {
      process.off("SIGTERM", onSignal);
      process.off("SIGINT", onSignal);
    },
  };
}
