// Sends one notification to one target over HTTPS (undici) with a total deadline, and classifies the answer as a
// value: delivered; retry (429, 5xx, 408, network, timeout; with the server's Retry-After); or rejected (other 4xx).
import { request } from "undici";
import { retryAfterFromHeaders } from "@sef/retry/retry-after.js";
import type { TargetRequest } from "./payloads.js";

export type DeliveryOutcome =
  | { readonly kind: "delivered"; readonly status: number }
  /** `inDoubt`: the request may have reached the target (a timeout, a connection lost after it was sent). */
  | { readonly kind: "retry"; readonly reason: string; readonly retryAfterMs?: number; readonly inDoubt?: boolean }
  | { readonly kind: "rejected"; readonly reason: string };

/** Network errors that happen before a request can have left: retrying them can never repeat a notification. */
const notSentCodes = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "UND_ERR_CONNECT_TIMEOUT",
]);

export interface DeliverOptions {
  /** Deadline for the whole request, connect to last byte, in milliseconds. */
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
}

/** Largest part of an error body quoted in a reason. */
const maxQuotedBodyChars = 200;

export async function deliver(url: string, req: TargetRequest, options: DeliverOptions): Promise<DeliveryOutcome> {
  const deadline = AbortSignal.timeout(options.timeoutMs);
  const signal = options.signal ? AbortSignal.any([deadline, options.signal]) : deadline;
  try {
    const res = await request(url, {
      method: "POST",
      body: req.body,
      headers: req.headers,
      signal,
      maxRedirections: 0,
    } as Parameters<typeof request>[1]);
    const text = (await res.body.text()).slice(0, maxQuotedBodyChars);
    if (res.statusCode >= 200 && res.statusCode < 300) return { kind: "delivered", status: res.statusCode };
    const header = (name: string): string | undefined => {
      const v = res.headers[name];
      return Array.isArray(v) ? v[0] : v;
    };
    const reason = `HTTP ${res.statusCode}${text ? `: ${text}` : ""}`;
    if (res.statusCode === 429 || res.statusCode === 408 || res.statusCode >= 500) {
      return { kind: "retry", reason, retryAfterMs: retryAfterFromHeaders(header, Date.now()) };
    }
    return { kind: "rejected", reason };
  } catch (err) {
    if (options.signal?.aborted) return { kind: "retry", reason: "shutting down", inDoubt: true };
    const e = err as Error & { code?: string; cause?: { code?: string } };
    if (deadline.aborted) return { kind: "retry", reason: `timed out after ${options.timeoutMs} ms`, inDoubt: true };
    const code = e.code ?? e.cause?.code;
    return {
      kind: "retry",
      reason: `network: ${code ?? e.name}`,
      inDoubt: code === undefined || !notSentCodes.has(code),
    };
  }
}
