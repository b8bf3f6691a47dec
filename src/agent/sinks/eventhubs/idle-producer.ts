// An Event Hubs producer that holds its AMQP connection only while it has something to send: it opens a client on
// the first operation, closes it once no operation ran for `idleCloseMs` (monotonic timer), and opens a new one next time.
import type {
  CreateBatchOptions,
  EventData,
  EventDataBatch,
  EventHubProducerClient,
  GetPartitionIdsOptions,
  SendBatchOptions,
} from "@azure/event-hubs";
import type { Logger } from "pino";
import { SinkClosedError } from "../errors.js";

/** The part of EventHubProducerClient the sink uses (EventHubProducerClient itself fits). */
export interface ProducerOperations {
  createBatch(options?: CreateBatchOptions): Promise<EventDataBatch>;
  sendBatch(batch: EventDataBatch | EventData[], options?: SendBatchOptions): Promise<void>;
  getPartitionIds(options?: GetPartitionIdsOptions): Promise<string[]>;
  close(): Promise<void>;
}

/** Counts connection opens/closes and the current state (the agent wires these to prom-client metrics). */
export interface ConnectionObserver {
  opened(): void;
  closed(reason: "idle" | "shutdown"): void;
}

export interface IdleClosingProducerOptions {
  /** Builds a new (not yet connected) client; the SDK connects on its first operation. */
  readonly createClient: () => EventHubProducerClient;
  /** Close the connection after this long without an operation; 0 keeps it open until `close()`. */
  readonly idleCloseMs: number;
  /** Deadline of one client close (a close that hangs is abandoned, logged). */
  readonly closeTimeoutMs?: number;
  readonly observer?: ConnectionObserver;
  readonly logger?: Logger;
  /** Monotonic milliseconds (default performance.now); tests may pass their own. */
  readonly monotonicNowMs?: () => number;
}

export const defaultCloseTimeoutMs = 10_000;

export class IdleClosingProducer implements ProducerOperations {
  private client: EventHubProducerClient | undefined;
  private inFlight = 0;
  private lastUsedMs = 0;
  private idleTimer: NodeJS.Timeout | undefined;
  private shutDown = false;
  /** Closes of idle clients still running (awaited by `close()`). */
  private readonly closing = new Set<Promise<void>>();
  private readonly monotonicNowMs: () => number;

  constructor(private readonly options: IdleClosingProducerOptions) {
    this.monotonicNowMs = options.monotonicNowMs ?? (() => performance.now());
  }

  /** Whether a client (and so, after its first operation, a connection) is currently held. */
  get isOpen(): boolean {
    return this.client !== undefined;
  }

  createBatch(options?: CreateBatchOptions): Promise<EventDataBatch> {
    return this.use((client) => client.createBatch(options));
  }

  sendBatch(batch: EventDataBatch | EventData[], options?: SendBatchOptions): Promise<void> {
    return this.use((client) =>
      Array.isArray(batch) ? client.sendBatch(batch, options) : client.sendBatch(batch, options),
    );
  }

  getPartitionIds(options?: GetPartitionIdsOptions): Promise<string[]> {
    return this.use((client) => client.getPartitionIds(options));
  }

  /** Closes the held client (if any) and any idle close still running; later operations fail. */
  async close(): Promise<void> {
    if (this.shutDown) return;
    this.shutDown = true;
    this.clearIdleTimer();
    const client = this.client;
    this.client = undefined;
    if (client) this.track(this.closeClient(client, "shutdown"));
    await Promise.all([...this.closing]);
  }

  private async use<T>(operation: (client: EventHubProducerClient) => Promise<T>): Promise<T> {
    if (this.shutDown) throw new SinkClosedError("eventhubs producer is closed");
    this.clearIdleTimer();
    if (!this.client) {
      this.client = this.options.createClient();
      this.options.observer?.opened();
      this.options.logger?.debug({ idleCloseMs: this.options.idleCloseMs }, "eventhubs connection opening");
    }
    const client = this.client;
    this.inFlight++;
    try {
      return await operation(client);
    } finally {
      this.inFlight--;
      this.lastUsedMs = this.monotonicNowMs();
      if (this.inFlight === 0) this.armIdleTimer(this.options.idleCloseMs);
    }
  }

  private armIdleTimer(delayMs: number): void {
    if (this.options.idleCloseMs <= 0 || this.shutDown || !this.client) return;
    this.clearIdleTimer();
    // Node timers run on libuv's monotonic clock; the check below re-reads the monotonic time before closing.
    this.idleTimer = setTimeout(() => this.closeIfIdle(), Math.max(1, delayMs));
    this.idleTimer.unref();
  }

  private clearIdleTimer(): void {
    if (this.idleTimer !== undefined) clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
  }

  private closeIfIdle(): void {
    this.idleTimer = undefined;
    if (this.shutDown || this.inFlight > 0 || !this.client) return;
    const idleForMs = this.monotonicNowMs() - this.lastUsedMs;
    if (idleForMs < this.options.idleCloseMs) {
      this.armIdleTimer(this.options.idleCloseMs - idleForMs);
      return;
    }
    const client = this.client;
    // The next operation opens a new client at once, even while this one is still closing.
    this.client = undefined;
    this.track(this.closeClient(client, "idle"));
  }

  private track(closing: Promise<void>): void {
    this.closing.add(closing);
    void closing.finally(() => this.closing.delete(closing));
  }

  private async closeClient(client: EventHubProducerClient, reason: "idle" | "shutdown"): Promise<void> {
    const timeoutMs = this.options.closeTimeoutMs ?? defaultCloseTimeoutMs;
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<"timeout">((resolve) => {
      timer = setTimeout(() => resolve("timeout"), timeoutMs);
    });
    try {
      const outcome = await Promise.race([client.close().then(() => "closed" as const), deadline]);
      if (outcome === "timeout")
        this.options.logger?.warn({ reason, timeoutMs }, "eventhubs connection close timed out; abandoned");
      else this.options.logger?.debug({ reason }, "eventhubs connection closed");
    } catch (err) {
      this.options.logger?.warn({ err, reason }, "eventhubs connection close failed");
    } finally {
      clearTimeout(timer);
      this.options.observer?.closed(reason);
    }
  }
}
