// Server retry hints, parsed one way for every client: `Retry-After` (seconds or HTTP date) and the
// millisecond variants Azure services send (`retry-after-ms`, `x-ms-retry-after-ms`).

/** Longest hint honoured by default: 15 minutes. */
export const maxHonouredRetryAfterMs = 15 * 60 * 1000;

/** `Retry-After` value (seconds or HTTP date) → milliseconds from `nowMs`, clamped to [0, capMs]; undefined when absent or unreadable. */
export function parseRetryAfterMs(
  value: string | string[] | undefined,
  nowMs: number,
  capMs = maxHonouredRetryAfterMs,
): number | undefined {
  const text = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!text) return undefined;
  let ms: number;
  if (/^\d+(\.\d+)?$/.test(text)) ms = Number(text) * 1000;
  else {
    const dateMs = Date.parse(text);
    if (Number.isNaN(dateMs)) return undefined;
    ms = dateMs - nowMs;
  }
  return clamp(ms, capMs);
}

/** Reads the hint from response headers: `retry-after-ms`, then `x-ms-retry-after-ms`, then `Retry-After`. */
export function retryAfterFromHeaders(
  header: (name: string) => string | undefined,
  nowMs: number,
  capMs = maxHonouredRetryAfterMs,
): number | undefined {
  for (const name of ["retry-after-ms", "x-ms-retry-after-ms"]) {
    const value = header(name)?.trim();
    if (value && /^\d+(\.\d+)?$/.test(value)) return clamp(Number(value), capMs);
  }
  return parseRetryAfterMs(header("retry-after"), nowMs, capMs);
}

function clamp(ms: number, capMs: number): number {
  return Math.min(Math.max(0, Math.ceil(ms)), capMs);
}
