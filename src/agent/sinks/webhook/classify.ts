// Pure classification of webhook answers: 2xx delivered; 408/429/5xx, auth failures and redirects retried (with Retry-After);
// 413 splits or rejects; other answers dead-letter the batch. Which redirects are followed is decided here too.
import { redactSecrets } from "../../observability/logger.js";
import { parseRetryAfterMs } from "@sef/retry/retry-after.js";
import { delivered, rejected, retry, type RecordOutcome } from "../sink.js";

const maxBodyChars = 300;

/**
 * A webhook's answer in the sinks' one outcome vocabulary (`RecordOutcome` of sinks/sink.ts): `delivered` (2xx),
 * `retry` (with the Retry-After hint; `needsOperator` for credentials and redirects not followed), `rejected` (with
 * `tooLarge` on 413: split the body, or reject the record when it was alone).
 */
export type WebhookAnswer = RecordOutcome;

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
  if (status >= 200 && status < 300) return delivered;
  const reason = `HTTP ${status}${body.trim() ? `: ${clipBody(body)}` : ""}`;
  if (status === 408 || status === 429 || status >= 500) {
    return retry(reason, parseRetryAfterMs(retryAfter, nowMs));
  }
  // Credentials can be fixed without losing records: keep them in the outbox.
  if (status === 401 || status === 403)
    return retry(`${reason} (check the webhook headers/credentials)`, undefined, true);
  if (status === 413) return rejected(reason, true);
  // A redirect the sink did not follow is a configuration to fix, never a reason to lose records.
  if (status >= 300 && status < 400) {
    return retry(
      `${reason} (redirect not followed: only 307/308 to the same origin are; fix webhook.url — records stay in the outbox)`,
      undefined,
      true,
    );
  }
  return rejected(reason);
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
