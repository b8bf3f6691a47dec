// The agent's version: a build-time constant in the packaged bundle (esbuild `define`), read from package.json
// when running from src/ or dist/ (tests, npm scripts), so records and --version agree either way.
import { readFileSync } from "node:fs";

/** Replaced by the package version when `npm run package` bundles the agent; undeclared otherwise. */
declare const SEF_BUNDLED_AGENT_VERSION: string | undefined;

function readPackageVersion(): string {
  // Works from src/ (tests) and dist/ (built): package.json is two levels up from this module's folder.
  const url = new URL("../../package.json", import.meta.url);
  const pkg = JSON.parse(readFileSync(url, "utf8")) as { version?: unknown };
  return typeof pkg.version === "string" ? pkg.version : "0.0.0";
}

export const agentVersion: string =
  typeof SEF_BUNDLED_AGENT_VERSION === "string" ? SEF_BUNDLED_AGENT_VERSION : readPackageVersion();
