// Fault injection for the local Logs Ingestion peer: a queue of "the next N requests fail like this",
// plus the parser of the `--fault` command-line spec. Pure; the server applies the faults.

export interface Fault {
  /** Answer with this status instead of processing the request (429, 503, 500, …). */
  readonly status?: number;
  /** Extra response headers, e.g. `Retry-After`, `retry-after-ms`, `x-ms-retry-after-ms`. */
  readonly headers?: Readonly<Record<string, string>>;
  /** Wait this long before answering (before processing normally when no status is set), in milliseconds. */
  readonly delayMs?: number;
  /** Destroy the connection instead of answering. */
  readonly reset?: boolean;
}

export class FaultQueue {
  private readonly queue: Fault[] = [];

  /** The next `count` requests meet `fault` (after the faults already queued). */
  failNext(count: number, fault: Fault): void {
    for (let i = 0; i < count; i++) this.queue.push(fault);
  }

  /** The fault for the request being handled, if any. */
  take(): Fault | undefined {
    return this.queue.shift();
  }

  /** Faults still queued. */
  pending(): number {
    return this.queue.length;
  }

  clear(): void {
    this.queue.length = 0;
  }
}

/**
 * Parses `N*KIND[:OPTION[,OPTION]]`: KIND is an HTTP status (`429`, `503`, `500`), `reset` or `slow`;
 * options `retry-after=SECONDS|HTTP-DATE`, `retry-after-ms=MS`, `x-ms-retry-after-ms=MS`, `delay-ms=MS`.
 * `slow:MS` is short for a delayed normal answer. Examples: `2*429:retry-after=1`, `1*503`, `1*reset`, `3*slow:2000`.
 */
export function parseFaultSpec(spec: string): { count: number; fault: Fault } {
  const match = /^(\d+)\*([a-z0-9]+)(?::(.*))?$/i.exec(spec.trim());
  if (!match)
    throw new Error(`fault "${spec}" is not N*KIND[:OPTIONS] (e.g. 2*429:retry-after=1, 1*reset, 3*slow:2000)`);
  const count = Number(match[1]);
  const kind = match[2]!.toLowerCase();
  const options = match[3] ?? "";
  const headers: Record<string, string> = {};
  let delayMs: number | undefined;
  if (kind === "slow" && /^\d+$/.test(options)) {
    return { count, fault: { delayMs: Number(options) } };
  }
  for (const option of options ? options.split(",") : []) {
    const [key, value] = option.split("=", 2).map((s) => s.trim()) as [string, string | undefined];
    if (value === undefined || value === "") throw new Error(`fault option "${option}" in "${spec}" has no value`);
    switch (key.toLowerCase()) {
      case "retry-after":
        headers["Retry-After"] = value;
        break;
      case "retry-after-ms":
        headers["retry-after-ms"] = value;
        break;
      case "x-ms-retry-after-ms":
        headers["x-ms-retry-after-ms"] = value;
        break;
      case "delay-ms":
        if (!/^\d+$/.test(value)) throw new Error(`delay-ms in "${spec}" must be a whole number of milliseconds`);
        delayMs = Number(value);
        break;
      default:
        throw new Error(`unknown fault option "${key}" in "${spec}"`);
    }
  }
  const extra = {
    ...(Object.keys(headers).length > 0 ? { headers } : {}),
    ...(delayMs !== undefined ? { delayMs } : {}),
  };
  if (kind === "reset") return { count, fault: { reset: true, ...extra } };
  if (kind === "slow") return { count, fault: { delayMs: delayMs ?? 1000 } };
  if (/^\d{3}$/.test(kind)) return { count, fault: { status: Number(kind), ...extra } };
  throw new Error(`unknown fault kind "${kind}" in "${spec}" (an HTTP status, reset or slow)`);
}
