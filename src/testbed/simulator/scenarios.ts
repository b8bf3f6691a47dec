// Finds and loads scenarios: the built-in ones shipped in `scenarios/*.json`, or any JSON file given by path.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseScenario, ScenarioError, type Scenario } from "./scenario-schema.js";

/** Directory of the built-in scenarios (`src/simulator/scenarios`, copied to `dist/simulator/scenarios` by the build). */
export const builtInScenarioDir = fileURLToPath(new URL("./scenarios/", import.meta.url));

/** Names of the built-in scenarios, sorted. */
export function listScenarioNames(): string[] {
  if (!existsSync(builtInScenarioDir)) return [];
  return readdirSync(builtInScenarioDir)
    .filter((file) => file.endsWith(".json"))
    .map((file) => basename(file, ".json"))
    .sort();
}

/** The built-in scenarios, loaded and validated. */
export function listScenarios(): Scenario[] {
  return listScenarioNames().map((name) => loadScenario(name));
}

function readJson(file: string): unknown {
  const text = readFileSync(file, "utf8");
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new ScenarioError(`scenario file ${file} is not valid JSON: ${(err as Error).message}`);
  }
}

/** Loads a built-in scenario by name, or a scenario file by path (anything with a `/`, `\` or `.json`). */
export function loadScenario(nameOrPath: string): Scenario {
  const looksLikePath = /[\\/]/.test(nameOrPath) || nameOrPath.endsWith(".json");
  if (looksLikePath) {
    if (!existsSync(nameOrPath)) throw new ScenarioError(`scenario file ${nameOrPath} does not exist`);
    return parseScenario(readJson(nameOrPath), nameOrPath);
  }
  const file = join(builtInScenarioDir, `${nameOrPath}.json`);
  if (!/^[a-z0-9][a-z0-9-]*$/.test(nameOrPath) || !existsSync(file)) {
    throw new ScenarioError(
      `unknown scenario "${nameOrPath}"; built-in scenarios: ${listScenarioNames().join(", ") || "(none found)"}`,
    );
  }
  const scenario = parseScenario(readJson(file), file);
  if (scenario.name !== nameOrPath)
    throw new ScenarioError(`scenario file ${file}: name "${scenario.name}" does not match the file name`);
  return scenario;
}
