// Store failures that the agent reports clearly and stops on (exit code 78, so a supervisor does not crash-loop).
import { SefError } from "@sef/errors/sef-error.js";

export class StoreError extends SefError {
  override readonly name = "StoreError";
  override readonly code = "SEF_ERR_STORE";
  constructor(
    message: string,
    readonly path: string,
    readonly reason: "corrupt" | "unwritable" | "locked" | "schema",
  ) {
    super(message);
  }
}
