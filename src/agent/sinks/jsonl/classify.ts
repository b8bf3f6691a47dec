// jsonl sink classification (pure): a failed append (ENOSPC, EIO, a missing directory) is retried by the drainer; the
// sink never rejects a record.
import { retry, type RecordOutcome } from "../sink.js";

export function classifyAppendError(path: string, err: unknown): RecordOutcome {
  return retry(`cannot append to ${path}: ${(err as Error).message}`);
}
