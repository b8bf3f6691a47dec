// The agent's version, read once from package.json so records and --version agree.
import { readFileSync } from "node:fs";

function readPackageVersion(): string {
  // Works from src/ (tests) and dist/ (built): package.json is two levels up from this module's folder.
  const url = new URL("../../package.json", import.meta.url);
  const pkg = JSON.parse(readFileSync(url, "utf8")) as { version?: unknown };
  return typeof pkg.version === "string" ? pkg.version : "0.0.0";
}

export const agentVersion: string = readPackageVersion();
