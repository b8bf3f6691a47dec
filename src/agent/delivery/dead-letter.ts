// Dead-letter files: records a destination will never accept (written by the drainer) and records evicted over the
// outbox's cap (written by the outbox), one JSON line each with the sink and the reason.
import { open, mkdir } from "node:fs/promises";
import { closeSync, fdatasyncSync, mkdirSync, openSync, writeSync } from "node:fs";
import { join } from "node:path";
import type { OutboxEntry } from "./outbox-entry.js";
import { redactSecrets } from "../observability/logger.js";

export interface DeadLetterLine {
  deadLetteredAt: string;
  sink: string;
  reason: string;
  record: unknown;
}

export class DeadLetterFile {
  constructor(readonly directory: string) {}

  /** Path of a sink's dead-letter file (the sink name made safe for a file name). */
  pathFor(sink: string): string {
    return join(this.directory, `${sink.replace(/[^A-Za-z0-9._-]+/g, "_")}.jsonl`);
  }

  /** Appends and fsyncs; throws when the file cannot be written (the caller must not move the cursor then). */
  async write(
    sink: string,
    items: ReadonlyArray<{ entry: Pick<OutboxEntry, "json">; reason: string }>,
    nowMs: number,
  ): Promise<void> {
    if (items.length === 0) return;
    await mkdir(this.directory, { recursive: true });
    const handle = await open(this.pathFor(sink), "a");
    try {
      const at = new Date(nowMs).toISOString();
      const lines = items.map(
        ({ entry, reason }) =>
          `{"deadLetteredAt":${JSON.stringify(at)},"sink":${JSON.stringify(sink)},"reason":${JSON.stringify(redactSecrets(reason))},"record":${entry.json}}\n`,
      );
      await handle.appendFile(lines.join(""));
      await handle.datasync();
    } finally {
      await handle.close();
    }
  }

  /**
   * Appends lines for records of several sinks (eviction) and fsyncs each file before returning; synchronous, so a
   * caller inside a store transaction deletes nothing before the lines are on disk. Throws when a file cannot be written.
   */
  writeSync(items: ReadonlyArray<{ sink: string; json: string; reason: string }>, nowMs: number): void {
    if (items.length === 0) return;
    mkdirSync(this.directory, { recursive: true });
    const at = new Date(nowMs).toISOString();
    const bySink = new Map<string, string[]>();
    for (const { sink, json, reason } of items) {
      const line = `{"deadLetteredAt":${JSON.stringify(at)},"sink":${JSON.stringify(sink)},"reason":${JSON.stringify(redactSecrets(reason))},"record":${json}}\n`;
      const lines = bySink.get(sink);
      if (lines) lines.push(line);
      else bySink.set(sink, [line]);
    }
    for (const [sink, lines] of bySink) {
      const fd = openSync(this.pathFor(sink), "a");
      try {
        writeSync(fd, lines.join(""));
        fdatasyncSync(fd);
      } finally {
        closeSync(fd);
      }
    }
  }
}
