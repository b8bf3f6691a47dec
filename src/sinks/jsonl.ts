// jsonl sink: appends one JSON record per line to a file and fsyncs before reporting success.
import { open, mkdir, type FileHandle } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { z } from "zod";
import type { Sink, OutboxEntry, SendResult } from "./sink.js";
import type { SinkFactory } from "./sink.js";

export class JsonlSink implements Sink {
  readonly name: string;
  readonly maxBatchRecords = 1000;
  readonly lingerMs = 0;
  private handle: FileHandle | undefined;

  constructor(readonly path: string) {
    this.name = `jsonl:${path}`;
  }

  async send(batch: readonly OutboxEntry[]): Promise<SendResult> {
    try {
      if (!this.handle) {
        await mkdir(dirname(this.path), { recursive: true });
        this.handle = await open(this.path, "a");
      }
      await this.handle.appendFile(batch.map((e) => e.json + "\n").join(""));
      await this.handle.datasync();
      return { kind: "ok" };
    } catch (err) {
      // A failed append may have written part of the batch; close so the next try reopens the file.
      await this.handle?.close().catch(() => undefined);
      this.handle = undefined;
      return { kind: "retryable", reason: `cannot append to ${this.path}: ${(err as Error).message}` };
    }
  }

  async close(): Promise<void> {
    await this.handle?.close();
    this.handle = undefined;
  }
}

export const jsonlSinkFactory: SinkFactory<Record<string, never>> = {
  type: "jsonl",
  summary: "jsonl:PATH — append one JSON record per line to PATH (fsync after each batch)",
  argument: "required",
  settingsSchema: z.object({}).strict(),
  create: ({ argument }) => new JsonlSink(resolve(argument ?? "")),
};
