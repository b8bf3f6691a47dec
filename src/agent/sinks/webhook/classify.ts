// Pure classification of webhook answers: 2xx ok; 408/429/5xx, auth failures and redirects retried (with Retry-After);
// 413 splits or rejects; other answers dead-letter the batch. Which redirects are followed is decided here too.
import { redactSecrets } from "../../observability/logger.js";
import { parseRetryAfterMs } from "@sef/retry/retry-after.js";

const maxBodyChars = 300;

export type WebhookAnswer =
  | { readonly kind: "ok" }
  | {
      readonly kind: "retryable";
      readonly reason: string;
      readonly retryAfterMs?: number;
      readonly needsOperator?: boolean;
    }
  /** 413: the body was too large; split it, or reject the record when it was alone. */
  | { readonly kind: "too-large"; readonly reason: string }
  | { readonly kind: "permanent"; readonly reason: string };

/** One line of the response body for reasons, secrets redacted, truncated. */
export function clipBody(body: string): string {
  const clean = redactSecrets(body).replace(/\s+/g, " ").trim();
  return clean.length > maxBodyChars ? `${clean.slice(0, maxBodyChars)}…` : clean;
}

export function classifyResponse(
  status: number,
  retryAfter: string | undefined,
  body: string,
  nowMs: number,
): WebhookAnswer {
  if (status >= 200 && status < 300) return { kind: "ok" };
  const reason = `HTTP ${status}${body.trim() ? `: ${clipBody(body)}` : ""}`;
  if (status === 408 || status === 429 || status >= 500) {
    const retryAfterMs = parseRetryAfterMs(retryAfter, nowMs);
    return retryAfterMs === undefined ? { kind: "retryable", reason } : { kind: "retryable", reason, retryAfterMs };
  }
  // Credentials can be fixed without losing records: keep them in the outbox.
  if (status === 401 || status === 403)
    return { kind: "retryable", reason: `${reason} (check the webhook headers/credentials)`, needsOperator: true };
  if (status === 413) return { kind: "too-large", reason };
  // A redirect the sink did not follow is a configuration to fix, never a reason to lose records.
  if (status >= 300 && status < 400) {
    return {
      kind: "retryable",
      reason: `${reason} (redirect not followed: only 307/308 to the same origin are; fix webhook.url — records stay in the outbox)`,
      needsOperator: true,
    };
  }
  return { kind: "permanent", reason };
}

/** Most redirects followed for one POST. */
export const maxRedirectHops = 3;

/**
 * Where to re-send a POST answered with `status`: a 307/308 to the same origin (scheme, host and port), method and
 * body kept; undefined for any other answer or target (the answer is then classified as it is).
 */
export function redirectTarget(status: number, location: string | undefined, currentUrl: string): URL | undefined {
  if ((status !== 307 && status !== 308) || !location) return undefined;
  let target: URL;
  try {
    target = new URL(location, currentUrl);
  } catch {
    return undefined;
  }
  return target.origin === new URL(currentUrl).origin ? target : undefined;
}
