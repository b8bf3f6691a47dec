// stdout sink classification (pure): a failed write is retried by the drainer (the stream may take it later); the
// sink never rejects a record.
import { retry, type RecordOutcome } from "../sink.js";

export function classifyWriteError(err: unknown): RecordOutcome {
  return retry(`stdout write failed: ${(err as Error).message}`);
}
