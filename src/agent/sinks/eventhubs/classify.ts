// Classifies what an Event Hubs send threw (after the SDK's own retries) into the sinks' one outcome vocabulary
// (`RecordOutcome` of sinks/sink.ts). Pure logic over the SDK's MessagingError codes; reasons are redacted of secrets.
import { redactSecrets } from "../../observability/logger.js";
import { rejected, retry, type FailedOutcome } from "../sink.js";

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

/**
 * - `retry`: transient (server busy, timeouts, link detach, connection loss, unknown, the caller's abort) — and also
 *   authorization failures: credentials or role assignments can be fixed while records wait in the outbox;
 * - `rejected`: the event itself can never be accepted (too large, quota exceeded): dead-letter it.
 */
export function classifySendError(err: unknown): FailedOutcome {
  const last = decisive(err);
  const reason = describe(last);
  if (isMessagingError(last) && last.code !== undefined) {
    if (recordRejectionCodes.has(last.code)) return rejected(reason);
    if (authCodes.has(last.code))
      return retry(
        `not authorized to send (check the credential and its "Azure Event Hubs Data Sender" role): ${reason}`,
      );
    if (last.code === "ServerBusyError") return retry(reason, serverBusyRetryAfterMs);
  }
  // Everything else — timeouts, detach, connection loss, entity not found during a deployment, errors we do not
  // know — is worth another try: records wait durably in the outbox, and dead-lettering them would lose them.
  return retry(reason);
}
