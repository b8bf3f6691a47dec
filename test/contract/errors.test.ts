// One error base for the agent and the fleet service: every error class is a SefError with a literal name (its class
// name) and a stable code of its own.
import { describe, expect, it } from "vitest";
import { SefError } from "../../src/contract/errors.js";
import { ConfigError } from "../../src/agent/config/load.js";
import { StoreError } from "../../src/agent/store/errors.js";
import { DataDirLockedError } from "../../src/agent/store/data-dir-lock.js";
import { ImdsRequestError } from "../../src/agent/imds/errors.js";
import { MalformedDocumentError, MalformedEventError } from "../../src/agent/imds/document.js";
import { DiscoveryParseError } from "../../src/agent/imds/discovery/failure.js";
import { OwnershipLostError } from "../../src/fleet/partition-state.js";
import { FleetConfigError } from "../../src/fleet/fleet-service.js";

const errors: Array<readonly [string, SefError, string]> = [
  ["ConfigError", new ConfigError(["x: bad"]), "SEF_ERR_CONFIG"],
  ["StoreError", new StoreError("corrupt", "/d/sef.db", "corrupt"), "SEF_ERR_STORE"],
  ["DataDirLockedError", new DataDirLockedError("/d", 42), "SEF_ERR_DATA_DIR_LOCKED"],
  ["ImdsRequestError", new ImdsRequestError("timeout", "slow"), "SEF_ERR_IMDS_REQUEST"],
  ["MalformedDocumentError", new MalformedDocumentError("not JSON"), "SEF_ERR_IMDS_MALFORMED_DOCUMENT"],
  ["MalformedEventError", new MalformedEventError("event_id", "no EventId"), "SEF_ERR_IMDS_MALFORMED_EVENT"],
  ["DiscoveryParseError", new DiscoveryParseError("unreadable", "no lease"), "SEF_ERR_DISCOVERY_PARSE"],
  ["OwnershipLostError", new OwnershipLostError("moved"), "SEF_ERR_FLEET_OWNERSHIP_LOST"],
  ["FleetConfigError", new FleetConfigError("targets.x: unset"), "SEF_ERR_FLEET_CONFIG"],
];

describe("SefError", () => {
  it.each(errors)("%s is a SefError named after its class, with its own code", (className, err, code) => {
    expect(err).toBeInstanceOf(SefError);
    expect(err.constructor.name).toBe(className);
    expect(err.name).toBe(className);
    expect(err.code).toBe(code);
    expect(String(err)).toMatch(new RegExp(`^${className}: `));
  });

  it("gives every class a different code", () => {
    expect(new Set(errors.map(([, err]) => err.code)).size).toBe(errors.length);
  });
});
