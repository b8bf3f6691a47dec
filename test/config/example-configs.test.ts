// The example configs shipped in infra/config must pass the agent's own validation, sink sections included.
import { describe, expect, it } from "vitest";
import { readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import { loadConfig } from "../../src/agent/config/load.js";

const dir = fileURLToPath(new URL("../../infra/config/", import.meta.url));

describe("example configs", () => {
  const files = readdirSync(dir).filter((f) => f.endsWith(".json"));
  it("exist for every sink", () => {
    expect(files).toEqual(expect.arrayContaining(["eventhubs.json", "loganalytics.json", "both.json"]));
  });
  for (const file of files) {
    it(`${file} is a valid configuration`, () => {
      const { config, sinkSettings } = loadConfig({ file: join(dir, file), env: {} });
      expect(config.sinks.length).toBeGreaterThan(0);
      if (config.sinks.includes("eventhubs"))
        expect(sinkSettings.eventhubs).toMatchObject({ credential: "managedIdentity" });
      if (config.sinks.includes("loganalytics"))
        expect(sinkSettings.loganalytics).toMatchObject({ credential: "managedIdentity" });
    });
  }
});
