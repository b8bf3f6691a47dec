// Classified IMDS failures: every failed request ends as one of these kinds, never as "no events".
import { SefError } from "@sef/errors/sef-error.js";

export type ImdsFailureKind =
  | "bad_request" // 400: a configuration problem (header, api-version); the poll stage retries it slowly
  | "throttled" // 429
  | "http_error" // 404/410/5xx and other unexpected statuses
  | "timeout"
  | "network_error" // reset, refused, DNS
  | "no_endpoint" // discovery has not found the IMDS endpoint yet (no request was sent)
  | "malformed" // body is not a valid document
  | "too_large"; // body over the cap

export class ImdsRequestError extends SefError {
  override readonly name = "ImdsRequestError";
  override readonly code = "SEF_ERR_IMDS_REQUEST";
  constructor(
    readonly kind: ImdsFailureKind,
    message: string,
    readonly status?: number,
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

export function classifyStatus(status: number): ImdsFailureKind {
  if (status === 400) return "bad_request";
  if (status === 429) return "throttled";
  return "http_error";
}
