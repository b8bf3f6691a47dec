// jsonl sink: appends one JSON record per line to a file and fsyncs before reporting the batch delivered.
import { open, mkdir, type FileHandle } from "node:fs/promises";
import { dirname } from "node:path";
import { allOutcomes, delivered, retry, type OutboxEntry, type SendOutcomes, type Sink } from "../sink.js";
import { jsonLines } from "./encode.js";

export class JsonlSink implements Sink {
  readonly name: string;
  readonly maxBatchRecords = 1000;
  readonly lingerMs = 0;
  private handle: FileHandle | undefined;

  constructor(readonly path: string) {
    this.name = `jsonl:${path}`;
  }

  async send(batch: readonly OutboxEntry[]): Promise<SendOutcomes> {
    try {
      if (!this.handle) {
        await mkdir(dirname(this.path), { recursive: true });
        this.handle = await open(this.path, "a");
      }
      await this.handle.appendFile(jsonLines(batch));
      await this.handle.datasync();
      return allOutcomes(batch, delivered);
    } catch (err) {
      // A failed append may have written part of the batch; close so the next try reopens the file.
      await this.handle?.close().catch(() => undefined);
      this.handle = undefined;
      return allOutcomes(batch, retry(`cannot append to ${this.path}: ${(err as Error).message}`));
    }
  }

  async close(): Promise<void> {
    await this.handle?.close();
    this.handle = undefined;
  }
}
