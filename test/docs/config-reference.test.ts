// The configuration reference is generated from the schema: the committed Markdown must be exactly what
// infra/docs/config-reference.ts writes, cover every setting and variable, and every setting must carry a description.
import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { filesWithReference, regenerate, repoRoot, settingEntries } from "../../infra/docs/config-reference.js";
import { environmentVariables } from "../../src/agent/config/load.js";
import { agentConfigSchema } from "../../src/agent/config/schema.js";

const referenceFile = "src/agent/config/README.md";
const entries = settingEntries();

describe("configuration reference", () => {
  it("is what the generator writes from the schema (run: npx tsx infra/docs/config-reference.ts)", () => {
    // The reference file by name too: in the mutation gate's sandbox (git-ignored) `git ls-files` lists no file.
    expect(readFileSync(join(repoRoot, referenceFile), "utf8")).toContain("<!-- config-reference:begin ");
    for (const file of new Set([referenceFile, ...filesWithReference()])) {
      const committed = readFileSync(join(repoRoot, file), "utf8");
      expect(committed, file).toBe(regenerate(committed, file, entries));
    }
  });

  it("documents every setting, with a description, and every environment variable", () => {
    const reference = readFileSync(join(repoRoot, referenceFile), "utf8");
    expect(entries.map((e) => e.path)).toEqual(expect.arrayContaining(Object.keys(agentConfigSchema.shape)));
    expect(entries.length).toBeGreaterThan(80);
    for (const entry of entries) {
      expect(entry.description, `${entry.path} needs documented(…, { description })`).not.toBe("");
      expect(reference, entry.path).toContain(`- \`${entry.path}\` — `);
    }
    for (const name of Object.keys(environmentVariables)) expect(reference, name).toContain(name);
  });

  it("shows type, unit, default, flag and variable", () => {
    const poll = entries.find((e) => e.path === "pollIntervalMs");
    expect(poll).toMatchObject({
      type: "integer 200–60000",
      unit: "ms",
      defaultText: "`1000`",
      flag: "--poll-interval-ms",
      variable: "SEF_POLL_INTERVAL_MS",
    });
    expect(entries.find((e) => e.path === "loganalytics.ruleId")).toMatchObject({ type: "string", required: true });
    expect(entries.find((e) => e.path === "hooks[].onInterrupted")).toMatchObject({
      type: "one of `skip`, `rerun`",
      defaultText: '`"skip"`',
    });
    expect(entries.find((e) => e.path === "eventhubs.maxBatchRecords")).toMatchObject({
      unit: "records",
      defaultText: "`2000`",
    });
  });
});
