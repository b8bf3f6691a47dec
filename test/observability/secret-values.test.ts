// Exact secret values (the configuration's and the environment's) are remembered once and removed from every text and
// log line: free text, nested log fields, error messages, a hook's stderr tail. Isolated: the remembered values are
// process-wide.
import { afterEach, describe, expect, it } from "vitest";
import { Writable } from "node:stream";
import { createLogger } from "../../src/agent/observability/logger.js";
import {
  forgetSecretValues,
  minimumSecretLength,
  redactDeep,
  redactSecrets,
  rememberSecretValues,
} from "../../src/redaction/secrets.js";
import { configSecretValues, environmentSecretValues, stringsAt } from "../../src/agent/config/secret-values.js";
import { loadConfig } from "../../src/agent/config/load.js";
import { hookSchema, runHook } from "../../src/agent/actions/hooks/hooks.js";
import { silentLogger } from "../../src/agent/observability/logger.js";
import { transition } from "../actions/fixtures.js";

afterEach(forgetSecretValues);

describe("exact secret values", () => {
  it("removes every occurrence of a remembered value, the longest first, and ignores short values", () => {
    expect(rememberSecretValues(["abc", undefined, "x".repeat(minimumSecretLength - 1), "tenant-key-1"])).toBe(1);
    rememberSecretValues(["tenant-key-1-and-more"]);
    expect(redactSecrets("a tenant-key-1, tenant-key-1-and-more, abc")).toBe("a [REDACTED], [REDACTED], abc");
    expect(rememberSecretValues(["8chars!!"])).toBe(3);
    expect(redactSecrets("x8chars!!x")).toBe("x[REDACTED]x");
  });

  it("walks plain and null-prototype objects and arrays, 8 levels by default", () => {
    rememberSecretValues(["deep-secret-value"]);
    const nest = (levels: number): unknown => (levels === 0 ? "deep-secret-value" : { a: nest(levels - 1) });
    expect(JSON.stringify(redactDeep(nest(8)))).toContain("[REDACTED]");
    expect(JSON.stringify(redactDeep(nest(9)))).toContain("deep-secret-value");
    const nestArray = (levels: number): unknown => (levels === 0 ? "deep-secret-value" : [nestArray(levels - 1)]);
    expect(JSON.stringify(redactDeep(nestArray(8)))).toContain("[REDACTED]");
    expect(JSON.stringify(redactDeep(nestArray(9)))).toContain("deep-secret-value");
    const bare = Object.assign(Object.create(null) as Record<string, unknown>, { s: "deep-secret-value" });
    expect(redactDeep(bare)).toEqual({ s: "[REDACTED]" });
    expect(redactDeep(["deep-secret-value", ["deep-secret-value"]])).toEqual(["[REDACTED]", ["[REDACTED]"]]);
    const error = new Error("deep-secret-value");
    expect((redactDeep({ error }) as { error: unknown }).error).toBe(error);
    expect(redactDeep(7)).toBe(7);
  });

  it("leaves text alone when nothing is remembered, and walks objects and arrays but not class instances", () => {
    expect(redactSecrets("tenant-key-1")).toBe("tenant-key-1");
    rememberSecretValues(["tenant-key-1"]);
    const date = new Date(0);
    expect(redactDeep({ a: ["tenant-key-1", 3, null], b: { c: "x tenant-key-1" }, date })).toEqual({
      a: ["[REDACTED]", 3, null],
      b: { c: "x [REDACTED]" },
      date,
    });
    expect(redactDeep({ a: { b: "tenant-key-1" } }, 1)).toEqual({ a: { b: "tenant-key-1" } });
  });

  it("keeps remembered values out of log lines: messages, any field, error messages", () => {
    rememberSecretValues(["client-secret-value"]);
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk, _enc, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const logger = createLogger({ destination });
    logger.warn({ detail: { stderr: "got client-secret-value" } }, "with client-secret-value");
    logger.error({ err: new Error("refused client-secret-value") }, "failed");
    const text = lines.join("");
    expect(text).not.toContain("client-secret-value");
    expect(text.match(/\[REDACTED\]/g)).toHaveLength(3);
  });

  it("collects the configuration's inline secrets, the variables it names and credential-named variables", () => {
    const env = {
      WEBHOOK_KEY: "  webhook-signing-key  ",
      HEADER_TOKEN_VALUE: "header-token-value",
      AZURE_CLIENT_SECRET: "azure-client-secret",
      AZURE_FEDERATED_TOKEN_FILE: "/var/run/secrets/token",
      DB_PASSWORD: "",
      PATH: "/usr/bin",
    };
    const { config } = loadConfig({
      env,
      flags: { sinks: ["jsonl:/dev/null"] },
    });
    const withSections = {
      ...config,
      webhook: {
        headers: {
          "X.Api-Key": "literal-header-key",
          Accept: "application/json",
          Other: { fromEnv: "HEADER_TOKEN_VALUE" },
        },
        signature: { secretEnv: "WEBHOOK_KEY", header: "X-Sef-Signature" },
      },
      eventhubs: { connectionString: "Endpoint=sb://a/;SharedAccessKeyName=b;SharedAccessKey=c" },
    } as unknown as typeof config;
    expect(new Set(configSecretValues(withSections, env))).toEqual(
      new Set([
        "literal-header-key",
        "Endpoint=sb://a/;SharedAccessKeyName=b;SharedAccessKey=c",
        "  webhook-signing-key  ",
        "webhook-signing-key",
        "header-token-value",
        "azure-client-secret",
      ]),
    );
    expect(environmentSecretValues(env)).toEqual(["header-token-value", "azure-client-secret"]);
  });

  it("takes a variable for a credential by its name, in any case, unless the name says where one is kept", () => {
    const names = [
      "APP_SECRET",
      "db_password",
      "LDAP_PASSWD",
      "GITHUB_TOKEN",
      "SEF_EVENTHUBS_CONNECTION_STRING",
      "SQLCONNECTIONSTRING",
      "X_API_KEY",
      "APIKEY",
      "AWS_ACCESS_KEY",
      "ACCESSKEY_ID",
      "TLS_PRIVATE_KEY",
      "PRIVATEKEY",
      "STORAGE_SAS_KEY",
      "SASKEY",
      "GOOGLE_CREDENTIALS",
    ];
    const kept = [
      "AZURE_FEDERATED_TOKEN_FILE",
      "CLIENT_SECRET_PATH",
      "TOKEN_DIR",
      "token_file",
      "PATH",
      "HOME",
      "KEY",
      "SAS",
      "API",
      "TOKEN_FILE_BACKUP_X",
    ];
    const env = Object.fromEntries([...names, ...kept].map((name) => [name, `value-of-${name}`]));
    expect(environmentSecretValues(env)).toEqual([
      ...names.map((n) => `value-of-${n}`),
      "value-of-TOKEN_FILE_BACKUP_X",
    ]);
  });

  it("reads an inline secret at a path whose segments hold dots, and nothing where the path leads nowhere", () => {
    const config = {
      webhook: { headers: { "X.Api-Key": "dotted-header-key", "X-Token": { fromEnv: "NOT_SET" } }, url: "x" },
    } as unknown as Parameters<typeof configSecretValues>[0];
    expect(configSecretValues(config, {})).toEqual(["dotted-header-key"]);
    const section = { a: { "b.c": "found", n: 1 }, s: "top" };
    expect(stringsAt(section, ["a.b.c", "a.n", "a.missing", "s.x", "s", "a"])).toEqual(["found", "top"]);
  });

  it("forgets every remembered value", () => {
    rememberSecretValues(["remembered-then-forgotten"]);
    forgetSecretValues();
    expect(rememberSecretValues([])).toBe(0);
    expect(redactSecrets("remembered-then-forgotten")).toBe("remembered-then-forgotten");
  });

  it("ships a hook's stderr tail with the remembered values redacted", async () => {
    rememberSecretValues(["hook-visible-secret"]);
    const hook = hookSchema.parse({
      name: "leak",
      on: ["Scheduled"],
      command: [process.execPath, "-e", "console.error('key hook-visible-secret'); process.exit(1)"],
    });
    const result = await runHook(hook, transition(), { logger: silentLogger() });
    expect(result.Detail).toBe("leak: exit 1; stderr: key [REDACTED]");
  });
});
