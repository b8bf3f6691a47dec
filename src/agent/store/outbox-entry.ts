// The unit the outbox hands out: a record, its position, and its JSON as stored (what sinks send).
import type { SefRecord } from "@sef/contract/record.js";

/** One record as it sits in the outbox: its position, its id and its body. */
export interface OutboxEntry {
  /** Position in the outbox (monotonic, starts at 1). */
  readonly seq: number;
  readonly record: SefRecord;
  /** The record serialized as JSON (what file and HTTP sinks write verbatim). */
  readonly json: string;
}
