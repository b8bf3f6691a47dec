// One record as the outbox hands it to the drainers, the sinks and the actions: its position, the record, its JSON as
// stored. The outbox makes them; nothing else does.
import type { SefRecord } from "@sef/contract/record.js";

export interface OutboxEntry {
  /** Position in the outbox (monotonic, starts at 1). */
  readonly seq: number;
  readonly record: SefRecord;
  /** The record serialized as JSON (what file and HTTP sinks write verbatim). */
  readonly json: string;
}
