// Store failures that the agent reports clearly and stops on (exit code 78, so a supervisor does not crash-loop).

export class StoreError extends Error {
  override readonly name = "StoreError";
  constructor(
    message: string,
    readonly path: string,
    readonly reason: "corrupt" | "unwritable" | "locked" | "schema",
  ) {
    super(message);
  }
}
