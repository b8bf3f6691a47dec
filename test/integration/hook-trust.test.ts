// Hooks get only what they need, through the built agent against the simulator: an allowlisted environment without
// sef's secrets, a hook's stderr quoting a secret shipped redacted, and a NUL character in an IMDS string failing the
// hook with a record while nothing stays running.
import { describe, expect, it } from "vitest";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startSimulator } from "../../src/testbed/simulator/server.js";
import { runCli, readJsonl, waitUntil } from "../helpers/agent-process.js";
import { ledgersSettled } from "../helpers/ledger-probe.js";
import type { HookRecord, SefRecord } from "../../src/contract/record.js";
import { hookAllowedVariables } from "../../src/agent/actions/hooks/hook-environment.js";

const secrets = {
  SEF_EVENTHUBS_CONNECTION_STRING:
    "Endpoint=sb://trust.servicebus.windows.net/;SharedAccessKeyName=send;SharedAccessKey=aGlkZGVuLWtleQ00;EntityPath=hub",
  AZURE_CLIENT_SECRET: "client-secret-7f3a9c2e1b",
  SEF_TRUST_WEBHOOK_KEY: "webhook-hmac-key-5d8e2a",
};
const literalHeader = "literal-api-key-91c4b7";
const allSecrets = [...Object.values(secrets), literalHeader];

const event = (id: string, over: Record<string, unknown> = {}) => ({
  EventId: id,
  EventType: "Reboot",
  EventSource: "Platform",
  Resources: ["WestNO_0"],
  notBeforeInSeconds: 900,
  autoStart: false,
  ...over,
});

describe("hooks and sef's secrets (built agent)", () => {
  it("gives hooks an allowlisted environment, redacts secrets a hook prints, and fails a hook on a NUL from IMDS", async () => {
    const sim = await startSimulator({ scenario: "idle" });
    const dir = mkdtempSync(join(tmpdir(), "sef-hook-trust-"));
    const out = join(dir, "records.jsonl");
    const dataDir = join(dir, "data");
    const envFile = join(dir, "env.json");
    const printEnv = `require("fs").writeFileSync(${JSON.stringify(envFile)}, JSON.stringify(process.env))`;
    const leak = `console.error("using " + process.argv.slice(1).join(" and ")); process.exit(3)`;
    writeFileSync(
      join(dir, "config.json"),
      JSON.stringify({
        imdsUrl: sim.url,
        pollIntervalMs: 200,
        dataDir,
        sinks: [`jsonl:${out}`],
        heartbeatIntervalMs: 0,
        // Not in use, but its secrets are sef's all the same.
        webhook: { headers: { "X-Api-Key": literalHeader }, signature: { secretEnv: "SEF_TRUST_WEBHOOK_KEY" } },
        hooks: [
          { name: "print-env", on: ["Scheduled"], eventTypes: ["Reboot"], command: [process.execPath, "-e", printEnv] },
          {
            name: "leak",
            on: ["Scheduled"],
            eventTypes: ["Freeze"],
            command: [process.execPath, "-e", leak, ...allSecrets],
          },
        ],
      }),
    );
    const agent = runCli(["run", "--config", join(dir, "config.json")], { env: secrets });
    const records = () => readJsonl<SefRecord>(out);
    const hookRecords = () => records().filter((r): r is HookRecord => r.RecordType === "Hook");
    try {
      sim.setEvents([
        event("EEEE0000-0000-4000-8000-000000000001"),
        event("EEEE0000-0000-4000-8000-000000000002", { EventType: "Freeze" }),
        event("EEEE0000-0000-4000-8000-000000000003", { Description: "host update\u0000; rm -rf /" }),
      ]);
      await waitUntil(() => hookRecords().length === 3, 15_000, "three hook records");
      await waitUntil(() => ledgersSettled(dataDir), 15_000, "every action settled, none left running");
      expect(await agent.stop("SIGTERM")).toBe(0);
    } finally {
      await agent.stop("SIGKILL");
      await sim.close();
    }

    const byEvent = (n: number) => hookRecords().find((r) => r.EventId.endsWith(String(n)))!;
    // The hook's environment: the allowlist's variables and the record's SEF_* ones, no secret.
    expect(byEvent(1)).toMatchObject({ Outcome: "Succeeded", ExitCode: 0 });
    const hookEnv = JSON.parse(readFileSync(envFile, "utf8")) as Record<string, string>;
    const allowed = new Set(hookAllowedVariables);
    const unexpected = Object.keys(hookEnv).filter(
      (name) => !name.startsWith("SEF_") && !allowed.has(name.toUpperCase()) && !/^LC_/.test(name),
    );
    expect(unexpected).toEqual([]);
    expect(hookEnv.PATH).toBe(process.env.PATH);
    expect(hookEnv.SEF_EVENT_ID).toBe("EEEE0000-0000-4000-8000-000000000001");
    expect(Object.keys(hookEnv).filter((name) => name in secrets)).toEqual([]);
    for (const secret of allSecrets) expect(JSON.stringify(hookEnv)).not.toContain(secret);

    // The stderr tail quoting every secret is shipped redacted.
    const leaked = byEvent(2);
    expect(leaked).toMatchObject({ Outcome: "Failed", ExitCode: 3 });
    expect(leaked.Detail).toMatch(/^leak: exit 3; stderr: using \[REDACTED\] and \[REDACTED\]/);

    // A NUL from IMDS: the hook fails with a record, nothing started, nothing left running (ledgersSettled above).
    expect(byEvent(3)).toMatchObject({ Outcome: "Failed", ExitCode: -1 });
    expect(byEvent(3).Detail).toContain("SEF_DESCRIPTION would hold a NUL character");

    // No secret anywhere the agent wrote: records, logs.
    const written = readFileSync(out, "utf8") + agent.stdout() + agent.stderr();
    for (const secret of allSecrets) expect(written).not.toContain(secret);
    expect(agent.stderr()).toContain("[REDACTED]");
  });
});
