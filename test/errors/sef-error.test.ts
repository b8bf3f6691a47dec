// One error base for the agent and the fleet service: every error class is a SefError with a literal name (its class
// name) and a stable code of its own, and src/errors/README.md lists exactly the codes the code defines.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { InternalError, SefError } from "../../src/errors/sef-error.js";
import { ConfigError } from "../../src/agent/config/load.js";
import { StoreError } from "../../src/agent/store/errors.js";
import { DataDirLockedError } from "../../src/agent/store/data-dir-lock.js";
import { ImdsRequestError } from "../../src/agent/imds/errors.js";
import { MalformedDocumentError, MalformedEventError } from "../../src/agent/imds/document.js";
import { DiscoveryParseError } from "../../src/agent/imds/discovery/failure.js";
import { SinkClosedError, SinkConfigError, SinkSpecError } from "../../src/agent/sinks/errors.js";
import { OwnershipLostError } from "../../src/fleet/partition-state.js";
import { FleetConfigError, PartitionClosedError } from "../../src/fleet/errors.js";
import { EventHubsSourceError } from "../../src/fleet/eventhubs-source.js";
import { KubeApiError } from "../../src/agent/actions/kubernetes/api-request.js";
import { KubeCredentialsError } from "../../src/agent/actions/kubernetes/credentials.js";

const repoRoot = resolve(import.meta.dirname, "../..");

const errors: Array<readonly [string, SefError, string]> = [
  ["InternalError", new InternalError("a view not settled"), "SEF_ERR_INTERNAL"],
  ["ConfigError", new ConfigError(["x: bad"]), "SEF_ERR_CONFIG"],
  ["StoreError", new StoreError("corrupt", "/d/sef.db", "corrupt"), "SEF_ERR_STORE"],
  ["DataDirLockedError", new DataDirLockedError("/d", 42), "SEF_ERR_DATA_DIR_LOCKED"],
  ["ImdsRequestError", new ImdsRequestError("timeout", "slow"), "SEF_ERR_IMDS_REQUEST"],
  ["MalformedDocumentError", new MalformedDocumentError("not JSON"), "SEF_ERR_IMDS_MALFORMED_DOCUMENT"],
  ["MalformedEventError", new MalformedEventError("event_id", "no EventId"), "SEF_ERR_IMDS_MALFORMED_EVENT"],
  ["DiscoveryParseError", new DiscoveryParseError("unreadable", "no lease"), "SEF_ERR_DISCOVERY_PARSE"],
  ["SinkSpecError", new SinkSpecError('unknown sink "x"'), "SEF_ERR_SINK_SPEC"],
  ["SinkConfigError", new SinkConfigError("eventhubs sink: no credentials"), "SEF_ERR_SINK_CONFIG"],
  ["SinkClosedError", new SinkClosedError("eventhubs producer is closed"), "SEF_ERR_SINK_CLOSED"],
  ["OwnershipLostError", new OwnershipLostError("moved"), "SEF_ERR_FLEET_OWNERSHIP_LOST"],
  ["FleetConfigError", new FleetConfigError("targets.x: unset"), "SEF_ERR_FLEET_CONFIG"],
  ["PartitionClosedError", new PartitionClosedError("closed"), "SEF_ERR_FLEET_PARTITION_CLOSED"],
  ["EventHubsSourceError", new EventHubsSourceError("no credentials"), "SEF_ERR_FLEET_EVENTHUBS_SOURCE"],
  ["KubeApiError", new KubeApiError(409, "Conflict", "Conflict"), "SEF_ERR_KUBE_API"],
  ["KubeCredentialsError", new KubeCredentialsError("kubeconfig: no current cluster"), "SEF_ERR_KUBE_CREDENTIALS"],
];

/** Every `code = "SEF_ERR_…"` an error class under src/ declares: `CODE ClassName path`. */
function declaredCodes(): string[] {
  const found: string[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) {
        if (name !== "dist" && name !== "node_modules") walk(path);
      } else if (name.endsWith(".ts") && !name.endsWith(".d.ts")) {
        const text = readFileSync(path, "utf8");
        for (const m of text.matchAll(
          /export class (\w+) extends [^{]+\{[^}]*?override readonly code = "(SEF_ERR_[A-Z_]+)"/g,
        ))
          found.push(`${m[2]} ${m[1]} ${relative(repoRoot, path)}`);
      }
    }
  };
  walk(join(repoRoot, "src"));
  return found.sort();
}

describe("SefError", () => {
  it.each(errors)("%s is a SefError named after its class, with its own code", (className, err, code) => {
    expect(err).toBeInstanceOf(SefError);
    expect(err.constructor.name).toBe(className);
    expect(err.name).toBe(className);
    expect(err.code).toBe(code);
    expect(String(err)).toMatch(new RegExp(`^${className}: `));
  });

  it("gives every class a different code, and tests every class the code defines", () => {
    expect(new Set(errors.map(([, err]) => err.code)).size).toBe(errors.length);
    expect(declaredCodes().map((line) => line.split(" ").slice(0, 2).join(" "))).toEqual(
      errors.map(([name, , code]) => `${code} ${name}`).sort(),
    );
  });

  it("lists exactly the declared codes in src/errors/README.md, each with its class and file", () => {
    const readme = readFileSync(join(repoRoot, "src/errors/README.md"), "utf8");
    const listed = [...readme.matchAll(/^- `(SEF_ERR_[A-Z_]+)` — `(\w+)` \(`([^`]+)`\)/gm)].map(
      (m) => `${m[1]} ${m[2]} ${m[3]}`,
    );
    expect(listed.sort()).toEqual(declaredCodes());
  });
});
