// Configuration loading edge by edge (the mutation gate's config-load group, with load.test.ts): strict integers,
// SEF_CONFIG, the file's errors word for word, lists, the reserved SEF_* variables, each sink's settings.
import { describe, expect, it } from "vitest";
import { ConfigError, environmentVariables, loadConfig, parseStrictInteger } from "../../src/agent/config/load.js";
import { platformDataDir } from "../../src/agent/config/data-dir.js";
import { configFile as file, configProblems as problems } from "../helpers/config-files.js";

describe("loading, edge by edge (the mutation gate's config-load group)", () => {
  it("reads whole numbers with a sign and blanks around them, and refuses one past the safe range", () => {
    expect(parseStrictInteger(" 42 ")).toBe(42);
    expect(parseStrictInteger("+7")).toBe(7);
    expect(parseStrictInteger("-7")).toBe(-7);
    expect(parseStrictInteger("9007199254740991")).toBe(Number.MAX_SAFE_INTEGER);
    expect(parseStrictInteger("9007199254740992")).toBeUndefined();
    expect(parseStrictInteger("4 2")).toBeUndefined();
    expect(parseStrictInteger("x42")).toBeUndefined();
    expect(parseStrictInteger("42x")).toBeUndefined();
  });

  it("takes the file from SEF_CONFIG when none is given, an empty SEF_CONFIG as none, and the given one over it", () => {
    const fromEnv = file({ pollIntervalMs: 2000 });
    expect(loadConfig({ env: { SEF_CONFIG: fromEnv } })).toMatchObject({
      file: fromEnv,
      config: { pollIntervalMs: 2000 },
    });
    expect(loadConfig({ env: { SEF_CONFIG: "" } })).toMatchObject({
      file: undefined,
      config: { pollIntervalMs: 1000 },
    });
    const given = file({ pollIntervalMs: 3000 });
    expect(loadConfig({ file: given, env: { SEF_CONFIG: fromEnv } }).config.pollIntervalMs).toBe(3000);
  });

  it("says exactly what is wrong with the file", () => {
    expect(problems(() => loadConfig({ file: "/nonexistent/sef.json", env: {} }))).toEqual([
      "config file /nonexistent/sef.json: cannot be read (ENOENT)",
    ]);
    for (const body of ["[]", "null", "3", '"text"']) {
      const path = file(body);
      expect(problems(() => loadConfig({ file: path, env: {} }))).toEqual([
        `config file ${path}: must hold a JSON object`,
      ]);
    }
    const broken = file("{ not json");
    expect(problems(() => loadConfig({ file: broken, env: {} }))[0]).toMatch(
      new RegExp(`^config file ${broken}: not valid JSON \\(.+\\)$`),
    );
    const bom = file("x\uFEFF{}");
    expect(problems(() => loadConfig({ file: bom, env: {} }))[0]).toMatch(/not valid JSON/); // only a leading mark
    const inValue = file(`{"dataDir": "/a\uFEFFb"}`);
    expect(loadConfig({ file: inValue, env: {} }).config.dataDir).toBe("/a\uFEFFb"); // a mark in a value is kept
  });

  it("puts each problem on its own line of the error's message", () => {
    try {
      loadConfig({ env: { SEF_POLL_INTERVAL_MS: "fast", SEF_METRICS_PORT: "slow" } });
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      expect(err).toMatchObject({ name: "ConfigError", code: "SEF_ERR_CONFIG" });
      expect((err as Error).message).toBe(
        'invalid configuration:\n  - SEF_POLL_INTERVAL_MS: expected a whole number, got "fast"\n' +
          '  - SEF_METRICS_PORT: expected a whole number, got "slow"',
      );
    }
  });

  it("splits a list at commas, dropping blanks; leaves an unknown flag's value and a repeated flag's list as given", () => {
    expect(loadConfig({ env: { SEF_SINKS: " stdout ,, jsonl:/tmp/a.jsonl ," } }).config.sinks).toEqual([
      "stdout",
      "jsonl:/tmp/a.jsonl",
    ]);
    expect(loadConfig({ env: {}, flags: { sinks: ["stdout", "jsonl:/tmp/b.jsonl"] } }).config.sinks).toEqual([
      "stdout",
      "jsonl:/tmp/b.jsonl",
    ]);
    expect(loadConfig({ env: {}, flags: { sinks: "stdout,jsonl:/tmp/c.jsonl" } }).config.sinks).toEqual([
      "stdout",
      "jsonl:/tmp/c.jsonl",
    ]);
    expect(problems(() => loadConfig({ env: {}, flags: { pollIntervalMs: undefined, bogus: "1" } }))).toEqual([
      "bogus (bogus): unknown setting (did you mean hooks?)",
    ]);
    expect(problems(() => loadConfig({ file: file({ bogus: 1 }), env: {} }))).toEqual([
      "bogus: unknown setting (did you mean hooks?)",
    ]);
    expect(
      problems(() => loadConfig({ file: file({ metrics: { prot: 1 } }), env: { SEF_METRICS_PORT: "9" } })),
    ).toEqual(["metrics.prot: unknown setting (did you mean port?)"]);
    // A section's unknown key that is also a top-level setting's name: the section's source names it, not that one's.
    expect(
      problems(() =>
        loadConfig({ file: file({ metrics: { pollIntervalMs: 5 } }), env: { SEF_POLL_INTERVAL_MS: "900" } }),
      ),
    ).toEqual(["metrics.pollIntervalMs: unknown setting"]);
  });

  it("lets through the SEF_* variables that are not settings but not typos either, and sorts the unknown ones", () => {
    const env = {
      SEF_TEST_ANYTHING: "1",
      SEF_BENCH_ANYTHING: "1",
      SEF_DEMO_SCENARIO: "1",
      SEF_CRASH_SEED: "1",
      SEF_EVENT_ID: "a hook's",
      SEF_ZZZ_SECOND: "1",
      SEF_AAA_FIRST: "1",
      XSEF_TEST: "1",
      sef_lower: "1",
    };
    expect(problems(() => loadConfig({ env })).map((p) => p.split(":")[0])).toEqual([
      "SEF_AAA_FIRST",
      "SEF_ZZZ_SECOND",
    ]);
    expect(problems(() => loadConfig({ env: { XSEF_TEST_A: "1", SEF_TESTX: "1", SEF_DEMO: "1" } })).length).toBe(2);
  });

  it("gives each sink in use its section, or the section's defaults, once per type", () => {
    const { sinkSettings } = loadConfig({
      env: {},
      flags: { sinks: ["stdout", "jsonl:/tmp/d.jsonl", "jsonl:/tmp/e.jsonl"] },
    });
    expect(Object.keys(sinkSettings).sort()).toEqual(["jsonl", "stdout"]);
    expect(sinkSettings.jsonl).toMatchObject({ maxBatchRecords: 1000, lingerMs: 0 });
    const withSection = loadConfig({
      file: file({ sinks: ["stdout", "jsonl:/tmp/f.jsonl"], stdout: {}, jsonl: { maxBatchRecords: 5 } }),
      env: {},
    }).sinkSettings;
    expect(Object.keys(withSection)).toEqual(["stdout", "jsonl"]);
    expect(withSection.stdout).toBeDefined();
    expect(withSection.jsonl).toMatchObject({ maxBatchRecords: 5, lingerMs: 0 });
  });

  it("judges the rest across fields when a setting is unknown or bad: problems about a bad section left out", () => {
    // An unknown top-level setting names no section: the sinks' own problems still show.
    expect(
      problems(() => loadConfig({ file: file({ pollIntervalMS: 1000, sinks: ["kafka", "jsonl"] }), env: {} })),
    ).toEqual([
      "pollIntervalMS: unknown setting (did you mean pollIntervalMs?)",
      expect.stringMatching(/^sinks\[0\]: .*unknown sink/),
      expect.stringMatching(/^sinks\[1\]: .*needs an argument/),
    ]);
    // A bad eventhubs section: the connection string variable it would have been judged with is its problem too.
    const eventhubs = problems(() =>
      loadConfig({
        file: file({ sinks: ["eventhubs", "webhook"], eventhubs: { maxBatchRecords: "many" } }),
        env: { SEF_EVENTHUBS_CONNECTION_STRING: "not one" },
      }),
    );
    expect(eventhubs.map((p) => p.split(":")[0])).toEqual(["eventhubs.maxBatchRecords", "webhook.url"]);
    // A bad sink list: which sinks are in use is unknown, so no sink's section is judged across fields.
    const noSinks = file({ sinks: [], eventhubs: { fullyQualifiedNamespace: "sb://ns/", eventHubName: "h" } });
    expect(problems(() => loadConfig({ file: noSinks, env: {} })).map((p) => p.split(":")[0])).toEqual(["sinks"]);
  });

  it("leaves a lower layer's value in place when a variable or flag is not a number: both are judged", () => {
    const tooFast = file({ pollIntervalMs: 50 });
    for (const sources of [{ env: { SEF_POLL_INTERVAL_MS: "fast" } }, { env: {}, flags: { pollIntervalMs: "fast" } }]) {
      const found = problems(() => loadConfig({ file: tooFast, ...sources }));
      expect(found).toHaveLength(2);
      expect(found[0]).toMatch(/expected a whole number, got "fast"$/);
      expect(found[1]).toMatch(/^pollIntervalMs\b.*: Too small/);
    }
  });

  it("lists SEF_CONFIG (the help's variable list) as the config file's path, not as a setting", () => {
    expect(environmentVariables.SEF_CONFIG).toEqual({ field: "(config file path)", kind: "string" });
  });

  it("checks the core settings' shapes, each refused with its own words", () => {
    const problemOf = (settings: Record<string, unknown>): string[] =>
      problems(() => loadConfig({ file: file(settings), env: {} }));
    const accepted = (settings: Record<string, unknown>) => loadConfig({ file: file(settings), env: {} }).config;
    expect(accepted({}).dataDir).toBe(platformDataDir());
    expect(accepted({ apiVersion: "2017-11-01" }).apiVersion).toBe("2017-11-01");
    for (const apiVersion of ["12017-11-01", "2017-11-011", "217-11-01", "2017-1-01", "2017-11-1", "dddd-dd-dd"]) {
      expect(problemOf({ apiVersion }), apiVersion).toEqual(["apiVersion: must look like 2020-07-01"]);
    }
    expect(accepted({ imdsUrl: "http://127.0.0.1:9" }).imdsUrl).toBe("http://127.0.0.1:9");
    expect(accepted({ imdsUrl: "https://imds.test" }).imdsUrl).toBe("https://imds.test");
    for (const imdsUrl of ["ftp://x.test", "xhttp://x.test", "httpsx://x.test"]) {
      expect(problemOf({ imdsUrl }), imdsUrl).toEqual([expect.stringMatching(/^imdsUrl: /)]);
    }
    expect(problemOf({ sinks: [] })).toEqual(["sinks: at least one sink is needed"]);
    expect(problemOf({ emittedRetentionMs: 7 * 24 * 3600 * 1000 - 1 })).toEqual([
      "emittedRetentionMs: must be at least 7 days",
    ]);
  });
});
