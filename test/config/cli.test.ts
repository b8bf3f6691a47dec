// Configuration problems through the built CLI (issue 12 item 11): exit 2 quickly, one plain line per bad setting on
// stderr, no stack trace; `sef check-config` validates the same way and starts nothing.
import { describe, expect, it } from "vitest";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runCli } from "../helpers/agent-process.js";

async function sef(args: string[], env: NodeJS.ProcessEnv = {}) {
  const child = runCli(args, { env });
  const code = await child.exited;
  return { code, stdout: child.stdout(), stderr: child.stderr() };
}

function configFile(text: string): string {
  const path = join(mkdtempSync(join(tmpdir(), "sef-cli-cfg-")), "config.json");
  writeFileSync(path, text);
  return path;
}

const noStackTrace = (text: string): void => {
  expect(text).not.toMatch(/^\s+at /m);
  expect(text).not.toMatch(/Error:/);
};

describe.concurrent("configuration errors from the CLI", () => {
  it("a number flag that is not a whole number: exit 2, one line naming the flag", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sef-cli-"));
    const result = await sef(["run", "--poll-interval-ms", "1s", "--data-dir", join(dir, "data")]);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe('sef: config: --poll-interval-ms: expected a whole number, got "1s"\n');
    expect(existsSync(join(dir, "data")), "nothing started").toBe(false);
  });

  it("every problem from file, variables and flags at once, unknown names with the closest valid one", async () => {
    const file = configFile(JSON.stringify({ pollIntervalMS: 500, metrics: { prot: 1 } }));
    const result = await sef(["run", "--config", file, "--shutdown-flush-ms", "5s"], {
      SEF_HEARTBEAT_INTERVAL_MS: "1e3",
      SEF_LOG_LVL: "debug",
    });
    expect(result.code).toBe(2);
    expect(result.stderr.trimEnd().split("\n").sort()).toEqual(
      [
        'sef: config: SEF_HEARTBEAT_INTERVAL_MS: expected a whole number, got "1e3"',
        'sef: config: --shutdown-flush-ms: expected a whole number, got "5s"',
        "sef: config: SEF_LOG_LVL: unknown environment variable (did you mean SEF_LOG_LEVEL?)",
        "sef: config: pollIntervalMS: unknown setting (did you mean pollIntervalMs?)",
        "sef: config: metrics.prot: unknown setting (did you mean port?)",
      ].sort(),
    );
    noStackTrace(result.stderr);
  });

  it("a signed webhook or credentials over plain http://: exit 2 naming the settings, unless allowed", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sef-cli-"));
    const webhook = { url: "http://receiver.test/hook", signature: { secretEnv: "HOOK_KEY" } };
    const config = (over: Record<string, unknown>) =>
      configFile(JSON.stringify({ sinks: ["webhook"], dataDir: join(dir, "data"), webhook: { ...webhook, ...over } }));
    const refused = await sef(["run", "--config", config({ headers: { "X-Api-Key": "literal-key" } })], {
      HOOK_KEY: "k3y",
    });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toBe(
      "sef: config: webhook.url: webhook.signature, webhook.headers.X-Api-Key would travel over plain http:// (readable and replayable on the way): use https://, or set webhook.allowPlainHttp to true\n",
    );
    expect(existsSync(join(dir, "data")), "nothing started").toBe(false);
    const allowed = await sef(["check-config", "--config", config({ allowPlainHttp: true })], { HOOK_KEY: "k3y" });
    expect(allowed.stderr).toBe("");
    expect(allowed.code).toBe(0);
  });

  it("an unknown subcommand or option: exit 2 with commander's one-line message", async () => {
    const unknownCommand = await sef(["frobnicate"]);
    expect(unknownCommand.code).toBe(2);
    expect(unknownCommand.stderr).toMatch(/^error: unknown command 'frobnicate'/);
    const unknownOption = await sef(["check-config", "--pol-interval-ms", "5"]);
    expect(unknownOption.code).toBe(2);
    expect(unknownOption.stderr).toMatch(/unknown option '--pol-interval-ms'/);
    noStackTrace(unknownCommand.stderr + unknownOption.stderr);
  });

  it("check-config: exit 0 for a valid file (UTF-8 BOM included), exit 2 naming cross-field problems; starts nothing", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sef-check-"));
    const good = configFile(
      "\uFEFF" + JSON.stringify({ pollIntervalMs: 500, dataDir: join(dir, "data"), sinks: ["stdout"] }),
    );
    const ok = await sef(["check-config", "--config", good]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/^sef: configuration is valid/);
    expect(existsSync(join(dir, "data"))).toBe(false);

    const bad = configFile(
      JSON.stringify({
        dataDir: join(dir, "data"),
        sinks: ["eventhubs", "loganalytics", "webhook"],
        loganalytics: {
          endpoint: "https://dce.example.ingest.monitor.azure.com",
          ruleId: "my-rule",
          streamName: "ScheduledEvents",
        },
        eventhubs: { fullyQualifiedNamespace: "sb://ns.servicebus.windows.net/", eventHubName: "h" },
      }),
    );
    const failed = await sef(["check-config", "--config", bad]);
    expect(failed.code).toBe(2);
    expect(
      failed.stderr
        .trimEnd()
        .split("\n")
        .map((l) => l.split(":").slice(0, 3).join(":")),
    ).toEqual([
      "sef: config: eventhubs.fullyQualifiedNamespace",
      "sef: config: loganalytics.ruleId",
      "sef: config: loganalytics.streamName",
      "sef: config: webhook.url",
    ]);
    expect(existsSync(join(dir, "data"))).toBe(false);
  });
});
