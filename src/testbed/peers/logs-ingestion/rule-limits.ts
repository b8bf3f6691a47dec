// Per-rule throughput limits of the Logs Ingestion service: requests and bytes per minute per data collection rule
// (12,000 requests and 2 GB by default), over a sliding minute; beyond them the service answers 429 with Retry-After.
// Pure logic on a monotonic clock the caller passes in.

export interface RuleLimits {
  readonly requestsPerMinute: number;
  readonly bytesPerMinute: number;
}

/** The service's documented limits per data collection rule. */
export const azureRuleLimits: RuleLimits = { requestsPerMinute: 12_000, bytesPerMinute: 2 * 1024 ** 3 };

const windowMs = 60_000;

export type Admission =
  | { readonly admitted: true }
  | { readonly admitted: false; readonly retryAfterSeconds: number; readonly reason: string };

interface Entry {
  readonly atMs: number;
  bytes: number;
}

/** One rule's sliding minute of accepted requests. */
export class RuleWindow {
  private readonly entries: Entry[] = [];
  private head = 0;
  private bytesInWindow = 0;

  constructor(private readonly limits: RuleLimits) {}

  /** Admits a request arriving at `nowMs` (counted from then on), or says how long to wait. */
  admit(nowMs: number): Admission & { entry?: { addBytes(bytes: number): void } } {
    this.prune(nowMs);
    const requests = this.entries.length - this.head;
    if (requests >= this.limits.requestsPerMinute) {
      const oldest = this.entries[this.head + requests - this.limits.requestsPerMinute]!;
      return {
        admitted: false,
        retryAfterSeconds: secondsUntil(oldest.atMs + windowMs, nowMs),
        reason: `more than ${this.limits.requestsPerMinute} requests per minute`,
      };
    }
    if (this.bytesInWindow >= this.limits.bytesPerMinute) {
      // Wait until enough of the oldest requests leave the window to bring the bytes under the limit.
      let excess = this.bytesInWindow - this.limits.bytesPerMinute;
      let index = this.head;
      do excess -= this.entries[index++]!.bytes;
      while (excess >= 0 && index < this.entries.length);
      return {
        admitted: false,
        retryAfterSeconds: secondsUntil(this.entries[index - 1]!.atMs + windowMs, nowMs),
        reason: `more than ${this.limits.bytesPerMinute} bytes per minute`,
      };
    }
    const entry: Entry = { atMs: nowMs, bytes: 0 };
    this.entries.push(entry);
    return {
      admitted: true,
      entry: {
        addBytes: (bytes) => {
          entry.bytes += bytes;
          this.bytesInWindow += bytes;
        },
      },
    };
  }

  /** Requests admitted in the minute before `nowMs`. */
  requestsInWindow(nowMs: number): number {
    this.prune(nowMs);
    return this.entries.length - this.head;
  }

  private prune(nowMs: number): void {
    while (this.head < this.entries.length && this.entries[this.head]!.atMs <= nowMs - windowMs) {
      this.bytesInWindow -= this.entries[this.head]!.bytes;
      this.head++;
    }
    if (this.head > 1024 && this.head * 2 > this.entries.length) {
      this.entries.splice(0, this.head);
      this.head = 0;
    }
  }
}

function secondsUntil(atMs: number, nowMs: number): number {
  return Math.max(1, Math.ceil((atMs - nowMs) / 1000));
}
