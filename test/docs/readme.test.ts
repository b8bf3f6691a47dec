// The README is part of the contract: it must document every record column (with its type) and every setting.
import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { recordColumns } from "../../src/contract/record.js";
import { agentConfigSchema } from "../../src/agent/config/schema.js";
import { environmentVariables } from "../../src/agent/config/load.js";
import { sinkFactories } from "../../src/agent/sinks/registry.js";
import { listScenarioNames } from "../../src/testbed/simulator/scenarios.js";

const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");

describe("README", () => {
  it("shows the two commands", () => {
    expect(readme).toContain("npm ci && npm start");
    expect(readme).toContain("npm test");
  });

  it("documents every record column with its type, in contract order", () => {
    let last = -1;
    for (const column of recordColumns) {
      const row = `| \`${column.name}\` | ${column.type} | ${column.description} |`;
      const at = readme.indexOf(row);
      expect(at, `README row for ${column.name}`).toBeGreaterThan(-1);
      expect(at).toBeGreaterThan(last);
      last = at;
    }
  });

  it("documents every setting, environment variable, sink and scenario", () => {
    for (const key of Object.keys(agentConfigSchema.shape)) {
      if (key === "imdsExtraHeaders") continue; // test-only
      expect(readme, key).toContain(`\`${key}`);
    }
    for (const name of Object.keys(environmentVariables)) if (name !== "SEF_CONFIG") expect(readme, name).toContain(name);
    for (const factory of sinkFactories) expect(readme, factory.type).toContain(`--sink ${factory.type}`.split(" ")[1]!);
    for (const scenario of listScenarioNames()) expect(readme, scenario).toContain(`\`${scenario}\``);
  });
});
