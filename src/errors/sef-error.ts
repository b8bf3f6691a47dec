// The one error base of every sef product (agent, fleet service): each error class has a literal `name` and a stable
// `code` (`SEF_ERR_…`), so logs and callers tell errors apart without reading messages. Exit codes are the CLI's
// business (cli/exit-codes.ts), not the errors'.

export class SefError extends Error {
  override readonly name: string = "SefError";
  /** Stable identifier of the error class; never changes once published. */
  readonly code: string = "SEF_ERR";
}

/** A SefError that carries a machine-readable reason (a metric label, a record's Outcome) beside its message. */
export class SefReasonError<Reason extends string> extends SefError {
  constructor(
    readonly reason: Reason,
    message: string,
  ) {
    super(message);
  }
}

/** A bug: a condition the code relies on did not hold (the message says which). Never the user's doing. */
export class InternalError extends SefError {
  override readonly name = "InternalError";
  override readonly code = "SEF_ERR_INTERNAL";
}
