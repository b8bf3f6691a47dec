// stdout sink encoding (pure): one JSON record per line.
import type { OutboxEntry } from "../../delivery/outbox-entry.js";

export function jsonLines(batch: readonly OutboxEntry[]): string {
  return batch.map((e) => e.json + "\n").join("");
}
