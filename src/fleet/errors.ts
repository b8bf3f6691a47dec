// The fleet service's errors a user can see (SefError: a literal name and a stable code each); the codes table is in
// src/contract/README.md#errors.
import { SefError } from "@sef/contract/errors.js";

/** A setting the fleet cannot start with (an unset environment variable it names, no checkpoint store). */
export class FleetConfigError extends SefError {
  override readonly name = "FleetConfigError";
  override readonly code = "SEF_ERR_FLEET_CONFIG";
}
