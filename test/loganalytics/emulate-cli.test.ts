// `sef-testbed emulate logs-ingestion` as a process: one ready line on stdout, faults from flags, rows readable over
// GET /__peer/rows, and exit 0 on SIGTERM.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { request } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { silentLogger } from "../../src/agent/observability/logger.js";
import { LogAnalyticsSink } from "../../src/agent/sinks/loganalytics/sink.js";
import { logAnalyticsSettingsSchema } from "../../src/agent/sinks/loganalytics/settings.js";
import { RulePauses } from "../../src/agent/sinks/loganalytics/rule-pauses.js";
import { entries, localTokenCredential, transitionRecord } from "./helpers.js";

const dir = mkdtempSync(join(tmpdir(), "sef-la-cli-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function getJson(url: string, caFile: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    request(url, { ca: readFileSync(caFile) }, (res) => {
      let text = "";
      res.on("data", (c: Buffer) => (text += c.toString()));
      res.on("end", () => resolve(JSON.parse(text)));
    })
      .on("error", reject)
      .end();
  });
}

describe("sef-testbed emulate logs-ingestion", () => {
  it("serves until SIGTERM and exits 0", async () => {
    const caFile = join(dir, "ca.pem");
    const child = spawn(
      process.execPath,
      [
        "--import",
        "tsx",
        "src/testbed/cli.ts",
        "emulate",
        "logs-ingestion",
        "--port",
        "0",
        "--rule-id",
        "dcr-cli",
        "--ca-cert-out",
        caFile,
        "--fault",
        "1*503:retry-after-ms=5",
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let stdout = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    await new Promise<void>((resolve, reject) => {
      child.stdout.on("data", () => {
        if (stdout.includes("\n")) resolve();
      });
      child.on("exit", (code) => reject(new Error(`emulator exited early with ${code}`)));
    });
    const match = /^sef-testbed emulate logs-ingestion listening on (https:\/\/127\.0\.0\.1:\d+)\n$/.exec(stdout);
    expect(match, stdout).not.toBeNull();
    const endpoint = match![1]!;

    const sink = new LogAnalyticsSink({
      settings: logAnalyticsSettingsSchema.parse({ endpoint, ruleId: "dcr-cli", caCertFile: caFile }),
      logger: silentLogger(),
      credential: localTokenCredential(),
      pauses: new RulePauses(),
    });
    const batch = entries([transitionRecord(1, { RecordId: "cli-1" })]);
    expect((await sink.send(batch, new AbortController().signal))[0]).toMatchObject({ kind: "retry", afterMs: 5 });
    await new Promise((r) => setTimeout(r, 10));
    expect((await sink.send(batch, new AbortController().signal)).every((o) => o.kind === "delivered")).toBe(true);
    await sink.close();
    const rows = (await getJson(`${endpoint}/__peer/rows`, caFile)) as { RecordId: string }[];
    expect(rows.map((r) => r.RecordId)).toEqual(["cli-1"]);

    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(stdout.split("\n").filter(Boolean)).toHaveLength(1);
  });
});
