// stdout sink: one JSON record per line on standard output (logs go to stderr, so the two never mix).
import { allOutcomes, delivered, type SendOutcomes, type Sink } from "../sink.js";
import type { OutboxEntry } from "../../delivery/outbox-entry.js";
import { classifyWriteError } from "./classify.js";
import { jsonLines } from "./encode.js";
import { stdoutSettingsSchema } from "./settings.js";
import type { DeliverySettings, SinkRetrySettings } from "../delivery-settings.js";

export class StdoutSink implements Sink {
  readonly name = "stdout";
  readonly maxBatchRecords: number;
  readonly lingerMs: number;
  readonly retryPolicy: SinkRetrySettings | undefined;

  constructor(
    private readonly out: NodeJS.WritableStream = process.stdout,
    delivery: DeliverySettings = stdoutSettingsSchema.parse({}),
  ) {
    ({ maxBatchRecords: this.maxBatchRecords, lingerMs: this.lingerMs, retry: this.retryPolicy } = delivery);
  }

  async send(batch: readonly OutboxEntry[]): Promise<SendOutcomes> {
    try {
      await new Promise<void>((resolve, reject) => {
        this.out.write(jsonLines(batch), (err) => (err ? reject(err) : resolve()));
      });
      return allOutcomes(batch, delivered);
    } catch (err) {
      return allOutcomes(batch, classifyWriteError(err));
    }
  }

  async close(): Promise<void> {}
}
