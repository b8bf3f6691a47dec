// stdout sink: one JSON record per line on standard output (logs go to stderr, so the two never mix).
import { z } from "zod";
import type { Sink, OutboxEntry, SendResult } from "./sink.js";
import type { SinkFactory } from "./sink.js";

export class StdoutSink implements Sink {
  readonly name = "stdout";
  readonly maxBatchRecords = 500;
  readonly lingerMs = 0;

  constructor(private readonly out: NodeJS.WritableStream = process.stdout) {}

  async send(batch: readonly OutboxEntry[]): Promise<SendResult> {
    const text = batch.map((e) => e.json + "\n").join("");
    try {
      await new Promise<void>((resolve, reject) => {
        this.out.write(text, (err) => (err ? reject(err) : resolve()));
      });
      return { kind: "ok" };
    } catch (err) {
      return { kind: "retryable", reason: `stdout write failed: ${(err as Error).message}` };
    }
  }

  async close(): Promise<void> {}
}

export const stdoutSinkFactory: SinkFactory<Record<string, never>> = {
  type: "stdout",
  summary: "stdout — one JSON record per line on standard output",
  argument: "none",
  settingsSchema: z.object({}).strict(),
  create: () => new StdoutSink(),
};
