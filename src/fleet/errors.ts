// The fleet service's errors a user can see (SefError: a literal name and a stable code each); the codes table is in
// src/errors/README.md.
import { SefError } from "@sef/errors/sef-error.js";

/** A setting the fleet cannot start with (an unset environment variable it names, no checkpoint store). */
export class FleetConfigError extends SefError {
  override readonly name = "FleetConfigError";
  override readonly code = "SEF_ERR_FLEET_CONFIG";
}

/** A partition's work stopped because it was closed (ownership moved or the service is stopping): its next owner goes on. */
export class PartitionClosedError extends SefError {
  override readonly name = "PartitionClosedError";
  override readonly code = "SEF_ERR_FLEET_PARTITION_CLOSED";
}
