// The configuration tests' two helpers: a config file written to a fresh temporary directory, and the problems a
// ConfigError names (anything else thrown is rethrown; no error at all fails the test).
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConfigError } from "../../src/agent/config/load.js";

/** Writes `content` (a string as it is, else as JSON) to a new config.json and returns its path. */
export function configFile(content: unknown): string {
  const path = join(mkdtempSync(join(tmpdir(), "sef-cfg-")), "config.json");
  writeFileSync(path, typeof content === "string" ? content : JSON.stringify(content));
  return path;
}

/** The problems of the ConfigError `fn` throws. */
export function configProblems(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error("expected a ConfigError");
}
