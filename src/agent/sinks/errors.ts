// The sinks' errors a user can see (SefError: a literal name and a stable code each; the codes table is in
// src/errors/README.md): a `--sink` spec or a sink's settings it cannot run with, a send on a closed client.
import { SefError } from "@sef/errors/sef-error.js";

/** A `--sink` / `sinks[]` entry that names no sink, or gives a sink an argument it does not take (or none it needs). */
export class SinkSpecError extends SefError {
  override readonly name = "SinkSpecError";
  override readonly code = "SEF_ERR_SINK_SPEC";
}

/** A sink's settings it cannot start with: no credentials, an environment variable not set, no URL. Never quotes a secret. */
export class SinkConfigError extends SefError {
  override readonly name = "SinkConfigError";
  override readonly code = "SEF_ERR_SINK_CONFIG";
}

/** A send after the sink's client was closed (shutting down): the records stay pending. */
export class SinkClosedError extends SefError {
  override readonly name = "SinkClosedError";
  override readonly code = "SEF_ERR_SINK_CLOSED";
}
