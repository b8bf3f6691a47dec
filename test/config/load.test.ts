// Configuration: precedence, defaults, and errors that name every bad field.
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/agent/config/load.js";
import { configFile as file, configProblems as problems } from "../helpers/config-files.js";
import { describeIssue } from "../../src/agent/config/rules.js";

describe("loadConfig", () => {
  it("applies defaults", () => {
    const { config } = loadConfig({ env: {} });
    expect(config).toMatchObject({ apiVersion: "2020-07-01", pollIntervalMs: 1000, sinks: ["stdout"] });
    // No imdsUrl by default: the endpoint is discovered (169.254.169.254 first).
    expect(config.imdsUrl).toBeUndefined();
    expect(config.imdsDiscovery).toMatchObject({
      linkLocalAddress: "169.254.169.254",
      port: 80,
      activeDhcp: { enabled: false },
    });
  });

  it("layers file < environment < flags", () => {
    const path = file({ pollIntervalMs: 2000, dataDir: "/from/file", apiVersion: "2019-08-01" });
    const { config } = loadConfig({
      file: path,
      env: { SEF_POLL_INTERVAL_MS: "3000", SEF_DATA_DIR: "/from/env" },
      flags: { dataDir: "/from/flag" },
    });
    expect(config.pollIntervalMs).toBe(3000);
    expect(config.dataDir).toBe("/from/flag");
    expect(config.apiVersion).toBe("2019-08-01");
  });

  it("reads the sink list from SEF_SINKS", () => {
    expect(loadConfig({ env: { SEF_SINKS: "stdout, jsonl:/tmp/x.jsonl" } }).config.sinks).toEqual([
      "stdout",
      "jsonl:/tmp/x.jsonl",
    ]);
  });

  it("the kubernetes section needs a node name: kubernetes.nodeName or NODE_NAME (the chart's downward API)", () => {
    const section = file({ kubernetes: { policy: { Freeze: "taint" } } });
    expect(problems(() => loadConfig({ file: section, env: {} }))).toContainEqual(
      expect.stringMatching(/^kubernetes\.nodeName: required when the environment variable NODE_NAME is not set/),
    );
    expect(loadConfig({ file: section, env: { NODE_NAME: "aks-np-0" } }).config.kubernetes).toMatchObject({
      policy: { Freeze: "taint", Reboot: "drain-then-approve" },
      drainLeadMs: 600_000,
    });
    expect(loadConfig({ file: file({}), env: {} }).config.kubernetes).toBeUndefined();
    expect(
      problems(() =>
        loadConfig({ file: file({ kubernetes: { nodeName: "n", policy: { Reboot: "evict" } } }), env: {} }),
      )[0],
    ).toMatch(/^kubernetes\.policy\.Reboot: /);
  });

  it("names every bad field at once", () => {
    const found = problems(() =>
      loadConfig({ file: file({ pollIntervalMs: 50, imdsUrl: "ftp://x", sinks: [] }), env: {} }),
    );
    expect(found.some((p) => p.startsWith("pollIntervalMs:"))).toBe(true);
    expect(found.some((p) => p.startsWith("imdsUrl:"))).toBe(true);
    expect(found.some((p) => p.startsWith("sinks:"))).toBe(true);
  });

  it("rejects unknown settings, unknown sinks and missing sink arguments", () => {
    const found = problems(() =>
      loadConfig({ file: file({ pollIntervalMS: 1000, sinks: ["kafka", "jsonl"] }), env: {} }),
    );
    expect(found).toContain("pollIntervalMS: unknown setting (did you mean pollIntervalMs?)");
    const sinks = problems(() => loadConfig({ file: file({ sinks: ["kafka", "jsonl"] }), env: {} }));
    expect(sinks.some((p) => p.startsWith("sinks[0]:") && p.includes("unknown sink"))).toBe(true);
    expect(sinks.some((p) => p.startsWith("sinks[1]:") && p.includes("needs an argument"))).toBe(true);
  });

  it("accepts the empty sections of the sinks with only the shared settings, and names an unknown key in them", () => {
    const { config } = loadConfig({
      file: file({ sinks: ["stdout", "jsonl:/tmp/x.jsonl"], stdout: {}, jsonl: {} }),
      env: {},
    });
    expect(config.sinks).toEqual(["stdout", "jsonl:/tmp/x.jsonl"]);
    expect(problems(() => loadConfig({ file: file({ stdout: { pretty: true } }), env: {} }))).toEqual([
      "stdout.pretty: unknown setting (did you mean retry?)",
    ]);
  });

  it("explains an unreadable or invalid file", () => {
    expect(problems(() => loadConfig({ file: "/nonexistent/sef.json", env: {} }))[0]).toMatch(/cannot be read/);
    expect(problems(() => loadConfig({ file: file("{ not json"), env: {} }))[0]).toMatch(/not valid JSON/);
  });

  it("rejects a non-numeric number variable by name", () => {
    expect(problems(() => loadConfig({ env: { SEF_POLL_INTERVAL_MS: "fast" } }))).toContain(
      'SEF_POLL_INTERVAL_MS: expected a whole number, got "fast"',
    );
  });

  it.each(["1s", "1e3", "0x10", "12.5", " ", "1_000", "Infinity"])(
    "parses numbers from flags and variables strictly (%j refused)",
    (text) => {
      expect(problems(() => loadConfig({ env: {}, flags: { pollIntervalMs: text } }))).toEqual([
        `--poll-interval-ms: expected a whole number, got "${text}"`,
      ]);
      expect(problems(() => loadConfig({ env: { SEF_METRICS_PORT: text } }))).toEqual([
        `SEF_METRICS_PORT: expected a whole number, got "${text}"`,
      ]);
    },
  );

  it("the metrics address: SEF_METRICS_HOST over the file's metrics.host, --metrics-host over both (the chart sets the node's IP)", () => {
    const path = file({ metrics: { host: "127.0.0.1", port: 9464 } });
    const plain = loadConfig({ file: path, env: {} }).config;
    expect(plain.metrics.host).toBe("127.0.0.1");
    expect(plain).not.toHaveProperty("metricsHost");
    expect(loadConfig({ file: path, env: { SEF_METRICS_HOST: "10.224.0.4" } }).config.metricsHost).toBe("10.224.0.4");
    expect(
      loadConfig({ file: path, env: { SEF_METRICS_HOST: "10.224.0.4" }, flags: { metricsHost: "127.0.0.2" } }).config
        .metricsHost,
    ).toBe("127.0.0.2");
    expect(loadConfig({ file: path, env: { SEF_METRICS_HOST: "" } }).config).not.toHaveProperty("metricsHost"); // empty: unset, as every SEF_* variable
  });

  it("names the source of a bad value from a flag or a variable", () => {
    expect(problems(() => loadConfig({ env: { SEF_POLL_INTERVAL_MS: "50" } }))[0]).toMatch(
      /^pollIntervalMs \(SEF_POLL_INTERVAL_MS\): /,
    );
    expect(problems(() => loadConfig({ env: {}, flags: { metricsPort: "70000" } }))[0]).toMatch(
      /^metricsPort \(--metrics-port\): /,
    );
  });

  it("reports unknown keys in every section and unknown SEF_* variables with the closest valid name", () => {
    const found = problems(() =>
      loadConfig({
        file: file({
          retry: { maxDelay: 5 },
          metrics: { prot: 1 },
          eventhubs: { lingerMS: 1 },
          hooks: [{ name: "h", on: ["Started"], command: ["true"], timeout: 5 }],
        }),
        env: {
          SEF_POLL_INTERVL_MS: "5",
          SEF_SINK: "stdout",
          SEF_EVENT_ID: "from a hook",
          SEF_TEST_CS: "x",
          SEF_ZZZZZZZZZZZZZZZZZZ: "1",
          SEF_EVENTHUBS_CONNECTION_STRING: "documented default name, allowed",
        },
      }),
    );
    expect(found.sort()).toEqual(
      [
        "SEF_POLL_INTERVL_MS: unknown environment variable (did you mean SEF_POLL_INTERVAL_MS?)",
        "SEF_SINK: unknown environment variable (did you mean SEF_SINKS?)",
        "SEF_ZZZZZZZZZZZZZZZZZZ: unknown environment variable",
        "retry.maxDelay: unknown setting (did you mean maxDelayMs?)",
        "metrics.prot: unknown setting (did you mean port?)",
        "eventhubs.lingerMS: unknown setting (did you mean lingerMs?)",
        "hooks.0.timeout: unknown setting (did you mean timeoutMs?)",
      ].sort(),
    );
  });

  it("a sink section of the wrong shape is that section's problem: the variables it would name are read without failing", () => {
    for (const wrong of [null, "x", 7, [{ connectionStringEnv: "SEF_HUB" }]]) {
      const found = problems(() =>
        loadConfig({ file: file({ eventhubs: wrong, webhook: wrong }), env: { SEF_HUB: "1" } }),
      );
      expect(found.map((p) => p.split(":")[0]).sort()).toEqual(["SEF_HUB", "eventhubs", "webhook"]);
    }
  });

  it("accepts a file saved with a UTF-8 byte order mark", () => {
    expect(
      loadConfig({ file: file("\uFEFF" + JSON.stringify({ pollIntervalMs: 700 })), env: {} }).config.pollIntervalMs,
    ).toBe(700);
  });

  it("validates the service sections (metrics, approval, hooks) with the rest", () => {
    const found = problems(() =>
      loadConfig({
        file: file({
          metrics: { port: 70000 },
          approval: { mode: "always" },
          hooks: [{ name: "h", on: [], command: ["x"] }],
        }),
        env: {},
      }),
    );
    expect(found.map((p) => p.split(":")[0]).sort()).toEqual(["approval.mode", "hooks.0.on", "metrics.port"]);
  });

  it("reports cross-field problems together with the per-field ones", () => {
    const found = problems(() =>
      loadConfig({
        file: file({
          pollIntervalMs: 5,
          sinks: ["webhook", "loganalytics"],
          loganalytics: { endpoint: "https://x.example", ruleId: "dcr-1", typo: 1 },
        }),
        env: {},
      }),
    );
    expect(found.map((p) => p.split(":")[0]).sort()).toEqual(["loganalytics.typo", "pollIntervalMs", "webhook.url"]);
  });

  describe("cross-field rules", () => {
    const check = (config: Record<string, unknown>, env: NodeJS.ProcessEnv = {}) =>
      problems(() => loadConfig({ file: file(config), env }));
    const valid = (config: Record<string, unknown>, env: NodeJS.ProcessEnv = {}) =>
      loadConfig({ file: file(config), env });

    it("Event Hubs needs a namespace or a connection string that parses", () => {
      expect(check({ sinks: ["eventhubs"] })[0]).toMatch(
        /^eventhubs: the eventhubs sink needs a namespace or a connection string.*SEF_EVENTHUBS_CONNECTION_STRING/,
      );
      const secret = "c2VjcmV0LWtleQ==";
      const bad = check(
        { sinks: ["eventhubs"] },
        { SEF_EVENTHUBS_CONNECTION_STRING: `Endpoint=https://x;Key=${secret}` },
      );
      expect(bad).toEqual([
        expect.stringMatching(
          /^environment variable SEF_EVENTHUBS_CONNECTION_STRING: not a valid Event Hubs connection string/,
        ),
      ]);
      expect(bad.join("")).not.toContain(secret);
      expect(
        check({
          sinks: ["eventhubs"],
          eventhubs: {
            connectionString: "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=k;SharedAccessKey=s",
          },
        }),
      ).toEqual([
        "eventhubs.eventHubName: required when the connection string (eventhubs.connectionString) has no EntityPath",
      ]);
      valid(
        { sinks: ["eventhubs"] },
        {
          SEF_EVENTHUBS_CONNECTION_STRING:
            "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=k;SharedAccessKey=s;EntityPath=h",
        },
      );
    });

    it("a namespace is a fully qualified host name", () => {
      for (const ns of ["sb://ns.servicebus.windows.net/", "ns.servicebus.windows.net:5671", "ns", "ns..windows.net"]) {
        expect(
          check({ sinks: ["eventhubs"], eventhubs: { fullyQualifiedNamespace: ns, eventHubName: "h" } }),
          ns,
        ).toEqual([expect.stringMatching(/^eventhubs.fullyQualifiedNamespace: must be a fully qualified host name/)]);
      }
      valid({
        sinks: ["eventhubs"],
        eventhubs: { fullyQualifiedNamespace: "ns.servicebus.windows.net", eventHubName: "h" },
      });
      valid({
        sinks: ["eventhubs"],
        eventhubs: {
          fullyQualifiedNamespace: "localhost",
          eventHubName: "h",
          customEndpointAddress: "amqps://localhost:5671",
        },
      });
    });

    it("Log Analytics: ruleId is dcr- plus 32 hex digits, the stream starts with Custom-, and both are required", () => {
      const endpoint = "https://dce.westeurope-1.ingest.monitor.azure.com";
      expect(
        check({
          sinks: ["loganalytics"],
          loganalytics: { endpoint, ruleId: "dcr-1", streamName: "ScheduledEvents" },
        }).map((p) => p.split(":")[0]),
      ).toEqual(["loganalytics.ruleId", "loganalytics.streamName"]);
      expect(check({ sinks: ["loganalytics"] })).toEqual([
        "loganalytics.endpoint: required, but not set (the loganalytics sink is in use)",
        "loganalytics.ruleId: required, but not set (the loganalytics sink is in use)",
      ]);
      valid({ sinks: ["loganalytics"], loganalytics: { endpoint, ruleId: `dcr-${"0a".repeat(16)}` } });
    });

    it("a webhook needs a URL, and the variables its headers and signature name", () => {
      expect(check({ sinks: ["webhook"] })).toEqual([
        "webhook.url: the webhook sink needs a URL: set webhook.url or use --sink webhook:URL",
      ]);
      expect(check({ sinks: ["webhook:ftp://x"] })[0]).toMatch(/webhook:URL needs an http/);
      expect(
        check({
          sinks: ["webhook:https://example.test/hook"],
          webhook: {
            headers: { Authorization: { fromEnv: "HOOK_TOKEN" } },
            signature: { secretEnv: "SEF_WEBHOOK_SECRET" },
          },
        }),
      ).toEqual([
        "webhook.headers.Authorization: environment variable HOOK_TOKEN is not set",
        "webhook.signature.secretEnv: environment variable SEF_WEBHOOK_SECRET is not set",
      ]);
      const ok = valid(
        { sinks: ["webhook:https://example.test/hook"], webhook: { signature: { secretEnv: "SEF_WEBHOOK_SECRET" } } },
        { SEF_WEBHOOK_SECRET: "s" },
      );
      expect(ok.sinkSettings.webhook).toMatchObject({ timeoutMs: 10_000 });
    });

    it("a webhook signs or sends credentials over plain http:// only when allowPlainHttp says so", () => {
      const env = { K: "k", T: "t" };
      const plain = (webhook: Record<string, unknown>, sink = "webhook:http://receiver.test/x"): string[] => {
        try {
          loadConfig({ file: file({ sinks: [sink], webhook }), env });
          return [];
        } catch (err) {
          return problems(() => {
            throw err;
          });
        }
      };
      expect(plain({ signature: { secretEnv: "K" } })).toEqual([
        "webhook.url: webhook.signature would travel over plain http:// (readable and replayable on the way): use https://, or set webhook.allowPlainHttp to true",
      ]);
      expect(plain({ headers: { Accept: "json", Auth: { fromEnv: "T" }, "X-Token": "t" } })[0]).toMatch(
        /^webhook\.url: webhook\.headers\.Auth, webhook\.headers\.X-Token would travel/,
      );
      expect(plain({ url: "HTTP://receiver.test/x", signature: { secretEnv: "K" } }, "webhook")).toHaveLength(1);
      expect(plain({ headers: { Accept: "json", "X-Team": "sre" } })).toEqual([]);
      expect(plain({ signature: { secretEnv: "K" }, allowPlainHttp: true })).toEqual([]);
      expect(plain({ signature: { secretEnv: "K" } }, "webhook:https://receiver.test/x")).toEqual([]);
      expect(
        plain({ url: "http://receiver.test/x", signature: { secretEnv: "K" } }, "webhook:https://r.test/x"),
      ).toEqual([]);
    });
  });
});

describe("cross-field rules", () => {
  const load = (content: unknown, env: NodeJS.ProcessEnv = {}) =>
    problems(() => loadConfig({ file: file(content), env }));

  it("names a sink listed twice, by its place", () => {
    expect(load({ sinks: ["stdout", "jsonl:/tmp/a.jsonl", "stdout"] })).toEqual(['sinks[2]: "stdout" is listed twice']);
  });

  it("checks the first of two specs of one type (the one the agent uses)", () => {
    expect(
      loadConfig({ file: file({ sinks: ["webhook:http://127.0.0.1:9/a", "webhook:not-a-url"] }), env: {} }).config
        .sinks,
    ).toHaveLength(2);
    expect(load({ sinks: ["webhook:not-a-url", "webhook:http://127.0.0.1:9/a"] })).toEqual([
      'sinks: webhook:URL needs an http:// or https:// URL (got "not-a-url")',
    ]);
  });

  it("reports each sink's own problems in the order of the sinks' names", () => {
    const found = load({
      sinks: ["webhook", "loganalytics"],
      loganalytics: { endpoint: "https://dce.example", ruleId: "nope" },
    });
    expect(found.map((p) => p.split(":")[0])).toEqual(["loganalytics.ruleId", "webhook.url"]);
  });

  it("needs no NODE_NAME when kubernetes.nodeName is set; a blank NODE_NAME is none", () => {
    expect(
      loadConfig({ file: file({ kubernetes: { nodeName: "aks-np-0" } }), env: {} }).config.kubernetes,
    ).toMatchObject({ nodeName: "aks-np-0" });
    expect(load({ kubernetes: {} }, { NODE_NAME: "  " })).toContainEqual(
      expect.stringMatching(/^kubernetes\.nodeName: required/),
    );
  });

  it("wants pdbRetryMaxMs at least pdbRetryInitialMs", () => {
    expect(load({ kubernetes: { nodeName: "n", pdbRetryInitialMs: 2000, pdbRetryMaxMs: 1999 } })).toEqual([
      "kubernetes.pdbRetryMaxMs: must be at least pdbRetryInitialMs",
    ]);
    expect(
      loadConfig({
        file: file({ kubernetes: { nodeName: "n", pdbRetryInitialMs: 2000, pdbRetryMaxMs: 2000 } }),
        env: {},
      }).config.kubernetes,
    ).toMatchObject({ pdbRetryMaxMs: 2000 });
  });

  it("says 'required, but not set' for a missing value only", () => {
    expect(describeIssue({ code: "invalid_type", message: "Invalid input: expected string, received undefined" })).toBe(
      "required, but not set",
    );
    expect(describeIssue({ code: "invalid_type", message: "Invalid input: expected string, received number" })).toBe(
      "Invalid input: expected string, received number",
    );
    expect(describeIssue({ code: "custom", message: "received undefined" })).toBe("received undefined");
    expect(describeIssue({ code: "invalid_type", message: "received undefined, then more" })).toBe(
      "received undefined, then more",
    );
  });
});
