// Classifies what an Event Hubs send threw (after the SDK's own retries) into the drain loop's terms.
// Pure logic over the SDK's MessagingError codes; reasons are redacted of secrets.
import { redactSecrets } from "../../observability/logger.js";

/**
 * - `retryable`: transient (server busy, timeouts, link detach, connection loss, unknown) — and also
 *   authorization failures: credentials or role assignments can be fixed while records wait in the outbox;
 * - `reject-record`: the event itself can never be accepted (too large, quota exceeded): dead-letter it;
 * - `aborted`: the caller's signal fired (shutdown): retry later.
 */
export type SendErrorClass =
  | { readonly kind: "retryable"; readonly reason: string; readonly retryAfterMs?: number }
  | { readonly kind: "reject-record"; readonly reason: string };

export interface MessagingErrorLike {
  readonly name: string;
  readonly message: string;
  readonly code?: string;
  readonly retryable?: boolean;
}

/** Duck-typed `isMessagingError` (the SDK's own guard checks `name === "MessagingError"` too). */
export function isMessagingError(err: unknown): err is MessagingErrorLike {
  return typeof err === "object" && err !== null && (err as { name?: unknown }).name === "MessagingError";
}

/** Codes meaning this event (not the service) is the problem. */
const recordRejectionCodes = new Set(["MessageTooLargeError", "QuotaExceededError"]);
const authCodes = new Set(["UnauthorizedError"]);
/** After an SDK retry loop of server-busy answers the service asks for ~4 s; let the drain loop back off at least that. */
export const serverBusyRetryAfterMs = 4000;

/** The error the decision rests on: the SDK wraps repeated failures in an AggregateError (last = most recent). */
function decisive(err: unknown): unknown {
  if (err instanceof AggregateError && err.errors.length > 0) return decisive(err.errors[err.errors.length - 1]);
  return err;
}

function describe(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return redactSecrets(`${typeof code === "string" ? code : err.name}: ${err.message}`);
  }
  return redactSecrets(String(err));
}

export function classifySendError(err: unknown): SendErrorClass {
  const last = decisive(err);
  const reason = describe(last);
  if (isMessagingError(last) && last.code !== undefined) {
    if (recordRejectionCodes.has(last.code)) return { kind: "reject-record", reason };
    if (authCodes.has(last.code)) {
      return {
        kind: "retryable",
        reason: `not authorized to send (check the credential and its "Azure Event Hubs Data Sender" role): ${reason}`,
      };
    }
    if (last.code === "ServerBusyError") return { kind: "retryable", reason, retryAfterMs: serverBusyRetryAfterMs };
  }
  // Everything else — timeouts, detach, connection loss, entity not found during a deployment, errors we do not
  // know — is worth another try: records wait durably in the outbox, and dead-lettering them would lose them.
  return { kind: "retryable", reason };
}
