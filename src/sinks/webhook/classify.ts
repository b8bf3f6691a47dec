// Pure classification of webhook answers: 2xx ok; 408/429/5xx and auth failures retried (with Retry-After);
// 413 splits or rejects; other answers dead-letter the batch.
import { redactSecrets } from "../../observability/logger.js";
import { parseRetryAfterMs } from "../../util/retry-after.js";

const maxBodyChars = 300;

export type WebhookAnswer =
  | { readonly kind: "ok" }
  | { readonly kind: "retryable"; readonly reason: string; readonly retryAfterMs?: number }
  /** 413: the body was too large; split it, or reject the record when it was alone. */
  | { readonly kind: "too-large"; readonly reason: string }
  | { readonly kind: "permanent"; readonly reason: string };

/** One line of the response body for reasons, secrets redacted, truncated. */
export function clipBody(body: string): string {
  const clean = redactSecrets(body).replace(/\s+/g, " ").trim();
  return clean.length > maxBodyChars ? `${clean.slice(0, maxBodyChars)}…` : clean;
}

export function classifyResponse(status: number, retryAfter: string | undefined, body: string, nowMs: number): WebhookAnswer {
  if (status >= 200 && status < 300) return { kind: "ok" };
  const reason = `HTTP ${status}${body.trim() ? `: ${clipBody(body)}` : ""}`;
  if (status === 408 || status === 429 || status >= 500) {
    const retryAfterMs = parseRetryAfterMs(retryAfter, nowMs);
    return retryAfterMs === undefined ? { kind: "retryable", reason } : { kind: "retryable", reason, retryAfterMs };
  }
  // Credentials can be fixed without losing records: keep them in the outbox.
  if (status === 401 || status === 403) return { kind: "retryable", reason: `${reason} (check the webhook headers/credentials)` };
  if (status === 413) return { kind: "too-large", reason };
  if (status >= 300 && status < 400) return { kind: "permanent", reason: `${reason} (redirects are not followed)` };
  return { kind: "permanent", reason };
}
