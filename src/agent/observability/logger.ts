// The agent's structured JSON logs (pino) on stderr: level names, secrets redacted before they are written (the
// contract's secret-redaction rule); under systemd (stderr is the journal stream named by JOURNAL_STREAM) each line
// gets an sd-daemon(3) `<N>` priority prefix.
import { fstatSync } from "node:fs";
import { pino, type Logger, type DestinationStream } from "pino";
import { redactingLoggerOptions, redactSecrets } from "@sef/redaction/secrets.js";

export type { Logger } from "pino";
export { redactSecrets };

/** syslog priorities of pino levels, as journald reads them from a `<N>` line prefix (sd-daemon(3)). */
export const journalPriorities: Readonly<Record<string, number>> = {
  fatal: 2,
  error: 3,
  warn: 4,
  info: 6,
  debug: 7,
  trace: 7,
};

/**
 * Whether stderr is the journal stream systemd connected: JOURNAL_STREAM holds `device:inode` of that stream
 * (systemd.exec(5)); it is compared with stderr itself, so a child whose stderr was redirected does not prefix.
 */
export function stderrIsJournal(env: NodeJS.ProcessEnv = process.env, fd = 2): boolean {
  const expected = env.JOURNAL_STREAM;
  if (!expected) return false;
  try {
    const stat = fstatSync(fd, { bigint: true });
    return `${stat.dev}:${stat.ino}` === expected.trim();
  } catch {
    return false;
  }
}

/** A synchronous stderr destination (pino's, which retries EAGAIN) that prefixes each JSON line with its journald priority. */
export function journalDestination(fd = 2): DestinationStream {
  const stream = pino.destination({ dest: fd, sync: true });
  return {
    write(line: string): void {
      const level = /^\{"level":"(\w+)"/.exec(line)?.[1] ?? "info";
      stream.write(`<${journalPriorities[level] ?? 6}>${line}`);
    },
  };
}

export interface LoggerOptions {
  level?: string;
  /** Default: stderr (with journald priority prefixes when stderr is the journal). */
  destination?: DestinationStream;
}

/** Levels are written as names (`"level":"warn"`), always the first key of the line. */
export function createLogger(options: LoggerOptions = {}): Logger {
  const redacting = redactingLoggerOptions();
  return pino(
    {
      ...redacting,
      level: options.level ?? "info",
      base: { app: "sef" },
      formatters: { ...redacting.formatters, level: (label) => ({ level: label }) },
    },
    options.destination ?? (stderrIsJournal() ? journalDestination(2) : pino.destination({ dest: 2, sync: true })),
  );
}

/** A logger that discards everything (tests that do not inspect logs). */
export function silentLogger(): Logger {
  return pino({ level: "silent" });
}
