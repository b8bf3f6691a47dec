// A pino logger at debug whose lines are kept, parsed: for tests that assert what a module logged (its message, its
// fields), in process, without a stream to read.
import { pino, type Logger } from "pino";

export function capturingLogger(): { logger: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const logger: Logger = pino(
    { level: "debug" },
    { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) },
  );
  return { logger, lines };
}
