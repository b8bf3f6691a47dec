// jsonl sink: appends one JSON record per line to a file (written as a string) and fsyncs before reporting success.
// The file only ever holds complete lines: a torn tail (kill -9 mid-write) is cut back on open, a failed append is
// truncated away.
import { open, mkdir, type FileHandle } from "node:fs/promises";
import { dirname } from "node:path";
import type { Logger } from "pino";
import { allOutcomes, delivered, type SendOutcomes, type Sink } from "../sink.js";
import type { OutboxEntry } from "../../delivery/outbox-entry.js";
import { classifyAppendError } from "./classify.js";
import { jsonLines } from "./encode.js";
import { jsonlSettingsSchema } from "./settings.js";
import type { DeliverySettings, SinkRetrySettings } from "../delivery-settings.js";

/** How far back from the end a torn tail is looked for at a time. */
const tailScanBytes = 64 * 1024;

export class JsonlSink implements Sink {
  readonly name: string;
  readonly maxBatchRecords: number;
  readonly lingerMs: number;
  readonly retryPolicy: SinkRetrySettings | undefined;
  private handle: FileHandle | undefined;

  constructor(
    readonly path: string,
    private readonly logger?: Logger,
    delivery: DeliverySettings = jsonlSettingsSchema.parse({}),
  ) {
    this.name = `jsonl:${path}`;
    ({ maxBatchRecords: this.maxBatchRecords, lingerMs: this.lingerMs, retry: this.retryPolicy } = delivery);
  }

  async send(batch: readonly OutboxEntry[]): Promise<SendOutcomes> {
    let sizeBefore: number | undefined;
    try {
      this.handle ??= await this.openFile();
      // Measured before each append (not remembered): a rotation by copytruncate must not make us extend the file.
      sizeBefore = (await this.handle.stat()).size;
      await appendText(this.handle, jsonLines(batch));
      await this.handle.datasync();
      return allOutcomes(batch, delivered);
    } catch (err) {
      // A failed append (ENOSPC, EIO) may have written part of the batch: cut the file back to where it was.
      if (this.handle && sizeBefore !== undefined) {
        await this.handle
          .truncate(sizeBefore)
          .catch((truncErr: unknown) =>
            this.logger?.error(
              { err: truncErr, path: this.path },
              "could not cut a failed append back; the file will be repaired when it is reopened",
            ),
          );
      }
      await this.handle?.close().catch(() => undefined);
      this.handle = undefined;
      return allOutcomes(batch, classifyAppendError(this.path, err));
    }
  }

  async close(): Promise<void> {
    await this.handle?.close();
    this.handle = undefined;
  }

  /** Opens for appending and cuts a partial last line (no trailing newline) back to the last complete one. */
  private async openFile(): Promise<FileHandle> {
    await mkdir(dirname(this.path), { recursive: true });
    const handle = await open(this.path, "a+");
    try {
      const size = (await handle.stat()).size;
      const keep = await completeLinesLength(handle, size);
      if (keep < size) {
        await handle.truncate(keep);
        await handle.datasync();
        this.logger?.warn(
          { path: this.path, removedBytes: size - keep },
          "jsonl file ended in a partial line (an interrupted write); cut back to the last complete line",
        );
      }
      return handle;
    } catch (err) {
      await handle.close().catch(() => undefined);
      throw err;
    }
  }
}

/**
 * Appends `text` as UTF-8. Handed to the file as a string, not a Buffer: Node writes a string without making an
 * ArrayBuffer of it, so a batch leaves no native memory behind for the garbage collector. A short write (rare on a
 * regular file) is finished from the bytes.
 */
async function appendText(handle: FileHandle, text: string): Promise<void> {
  const { bytesWritten } = await handle.write(text, null, "utf8");
  if (bytesWritten === Buffer.byteLength(text)) return;
  await handle.appendFile(Buffer.from(text, "utf8").subarray(bytesWritten));
}

/** Length of the file up to and including its last newline (`size` when it ends in one, 0 when it has none). */
async function completeLinesLength(handle: FileHandle, size: number): Promise<number> {
  let end = size;
  const buffer = Buffer.alloc(tailScanBytes);
  while (end > 0) {
    const start = Math.max(0, end - tailScanBytes);
    const { bytesRead } = await handle.read(buffer, 0, end - start, start);
    const at = buffer.subarray(0, bytesRead).lastIndexOf(0x0a);
    if (at !== -1) return start + at + 1;
    end = start;
  }
  return 0;
}
