// The agent's version: a build-time constant in the packaged bundle (esbuild `define`), read from the agent
// package's package.json when running from source or from the package's dist/ (tests, npm scripts), so records and
// --version agree either way.
import { readFileSync } from "node:fs";

/** Replaced by the package version when `npm run package` bundles the agent; undeclared otherwise. */
declare const SEF_BUNDLED_AGENT_VERSION: string | undefined;

/** The agent package's package.json: beside this module in source, one up from dist/. */
function readPackageVersion(): string {
  for (const relative of ["./package.json", "../package.json"]) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(relative, import.meta.url), "utf8")) as {
        name?: unknown;
        version?: unknown;
      };
      if (pkg.name === "sef" && typeof pkg.version === "string") return pkg.version;
    } catch {
      // not this level
    }
  }
  return "0.0.0";
}

export const agentVersion: string =
  typeof SEF_BUNDLED_AGENT_VERSION === "string" ? SEF_BUNDLED_AGENT_VERSION : readPackageVersion();
