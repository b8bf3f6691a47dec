// The testbed's logs: pino JSON lines on stderr, tagged `sef-testbed` (the peers' own logger, apart from the agent's).
import { pino, type Logger } from "pino";

export type { Logger } from "pino";

export function createLogger(options: { level?: string } = {}): Logger {
  return pino(
    { level: options.level ?? "info", base: { app: "sef-testbed" } },
    pino.destination({ dest: 2, sync: true }),
  );
}

/** A logger that discards everything (tests that do not inspect logs). */
export function silentLogger(): Logger {
  return pino({ level: "silent" });
}
