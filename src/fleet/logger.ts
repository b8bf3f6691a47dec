// The fleet service's structured JSON logs (pino) on stderr, a line each, with level names and secrets redacted before
// they are written (the contract's secret-redaction rule). A container's runtime collects stderr.
import { pino, type Logger } from "pino";
import { redactingLoggerOptions } from "@sef/redaction/secrets.js";

export type { Logger } from "pino";

export function createFleetLogger(level: string): Logger {
  const redacting = redactingLoggerOptions();
  return pino(
    {
      ...redacting,
      level,
      base: { app: "sef-fleet" },
      formatters: { ...redacting.formatters, level: (label) => ({ level: label }) },
    },
    pino.destination({ dest: 2, sync: true }),
  );
}
