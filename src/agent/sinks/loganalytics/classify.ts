// Pure classification of Logs Ingestion answers: which failures reject the request's rows, which are retried,
// how long the service asked us to wait, and when a record is old enough that Log Analytics will rewrite its time.
import { redactSecrets } from "../../observability/logger.js";
import { retryAfterFromHeaders } from "@sef/retry/retry-after.js";
import { rejected, retry, type FailedOutcome } from "../sink.js";

/** Log Analytics replaces a TimeGenerated older than this with the arrival time. */
export const timeGeneratedRewriteAgeMs = 48 * 3_600_000;
/** Default age past which a batch's oldest record is worth a warning. */
export const defaultStaleWarningMs = 36 * 3_600_000;
const maxReasonChars = 2000;

/** Statuses after which the request's rows can never be accepted as sent. */
const rejectingStatuses: ReadonlySet<number> = new Set([400, 413]);
/**
 * Statuses that an Azure-side change clears (a role assignment propagating, a DCR deployed after the agent):
 * retried with the capped backoff, never dead-lettered, and reported by /readyz at once.
 */
const awaitingAzureStatuses: ReadonlyMap<number, string> = new Map([
  [401, "not authenticated: check the identity and the token audience"],
  [
    403,
    "not authorized: the identity needs Monitoring Metrics Publisher on the DCR (a new role assignment can take minutes)",
  ],
  [
    404,
    "not found: check the DCE endpoint, the DCR immutable id and the stream (a DCR deployed after the agent is picked up)",
  ],
]);

/**
 * A failed request in the sinks' one outcome vocabulary (`RecordOutcome` of sinks/sink.ts), with the HTTP status when
 * there was one: `rejected` (the service will never accept these rows: dead-letter them with the reason) or `retry`
 * (`afterMs` is the service's hint when it throttled).
 */
export type UploadFailure = FailedOutcome & { readonly statusCode?: number };

interface ErrorLike {
  name?: unknown;
  message?: unknown;
  code?: unknown;
  statusCode?: unknown;
  errors?: unknown;
  cause?: unknown;
  response?: { headers?: { get?: (name: string) => string | undefined } };
}

function clip(text: string): string {
  const clean = redactSecrets(text).replace(/\s+/g, " ").trim();
  return clean.length > maxReasonChars ? `${clean.slice(0, maxReasonChars)}…` : clean;
}

/** The error inside the SDK's AggregateLogsUploadError (one chunk per upload call), else the error itself. */
function innermost(err: unknown): ErrorLike {
  const e = (err ?? {}) as ErrorLike;
  if (e.name === "AggregateLogsUploadError" && Array.isArray(e.errors) && e.errors.length > 0) {
    const first = e.errors[0] as { cause?: unknown };
    return (first.cause ?? {}) as ErrorLike;
  }
  return e;
}

/** Classifies what `LogsIngestionClient.upload` threw for one request. */
export function classifyUploadError(err: unknown, nowMs: number): UploadFailure {
  const e = innermost(err);
  const name = typeof e.name === "string" ? e.name : "Error";
  const message = typeof e.message === "string" ? e.message : String(err);
  const status = typeof e.statusCode === "number" ? e.statusCode : undefined;
  if (status === undefined) {
    const code = typeof e.code === "string" ? ` (${e.code})` : "";
    return retry(clip(`${name}${code}: ${message}`));
  }
  const serviceCode = typeof e.code === "string" ? ` ${e.code}` : "";
  const reason = clip(`HTTP ${status}${serviceCode}: ${message}`);
  if (rejectingStatuses.has(status)) return { ...rejected(reason), statusCode: status };
  const hint = awaitingAzureStatuses.get(status);
  if (hint !== undefined)
    return { ...retry(clip(`${reason} (${hint}; records stay in the outbox)`), undefined, true), statusCode: status };
  if (status === 429 || status === 503) {
    const get = e.response?.headers?.get;
    const retryAfterMs =
      typeof get === "function" ? retryAfterFromHeaders((n) => get.call(e.response?.headers, n), nowMs) : undefined;
    return { ...retry(reason, retryAfterMs), statusCode: status };
  }
  // 408, other 5xx and anything unexpected: retry rather than lose records.
  return { ...retry(reason), statusCode: status };
}

/**
 * A warning when the oldest record about to be sent is older than `thresholdMs`: Log Analytics replaces a TimeGenerated
 * older than 48 h with the arrival time, so KQL over TimeGenerated would misplace it. Undefined when there is nothing to say.
 */
export function oldestUndeliveredAgeWarning(
  nowMs: number,
  oldestTimeGenerated: string | undefined,
  thresholdMs: number = defaultStaleWarningMs,
): { readonly ageMs: number; readonly message: string } | undefined {
  if (oldestTimeGenerated === undefined) return undefined;
  const generatedMs = Date.parse(oldestTimeGenerated);
  if (Number.isNaN(generatedMs)) return undefined;
  const ageMs = nowMs - generatedMs;
  if (ageMs <= thresholdMs) return undefined;
  const hours = (ageMs / 3_600_000).toFixed(1);
  const message =
    ageMs > timeGeneratedRewriteAgeMs
      ? `oldest undelivered record is ${hours} h old: Log Analytics replaces a TimeGenerated older than 48 h with the arrival time`
      : `oldest undelivered record is ${hours} h old: past 48 h Log Analytics will replace its TimeGenerated with the arrival time`;
  return { ageMs, message };
}
