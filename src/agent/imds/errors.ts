// Classified IMDS failures: every failed request ends as one of these kinds, never as "no events".

export type ImdsFailureKind =
  | "bad_request" // 400: a configuration problem (header, api-version); retried slowly
  | "throttled" // 429
  | "http_error" // 404/410/5xx and other unexpected statuses
  | "timeout"
  | "network_error" // reset, refused, DNS
  | "no_endpoint" // discovery has not found the IMDS endpoint yet (no request was sent)
  | "malformed" // body is not a valid document
  | "too_large"; // body over the cap

export class ImdsRequestError extends Error {
  override readonly name = "ImdsRequestError";
  constructor(
    readonly kind: ImdsFailureKind,
    message: string,
    readonly status?: number,
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }

  /** Transient failures worth an immediate retry within one poll. 400 and malformed bodies are not. */
  get retryable(): boolean {
    return this.kind === "throttled" || this.kind === "http_error" || this.kind === "timeout" || this.kind === "network_error";
  }
}

export function classifyStatus(status: number): ImdsFailureKind {
  if (status === 400) return "bad_request";
  if (status === 429) return "throttled";
  return "http_error";
}
