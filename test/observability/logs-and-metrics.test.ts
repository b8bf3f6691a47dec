// Logs and metrics of the built agent (issue 12 item 15): JSON lines with level names on stderr, journald priority
// prefixes under systemd, every documented series at 0 from the start plus process metrics, no SAS secret in any
// output even with DEBUG=rhea*, and a warning for a secret in a config file others can read.
import { describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { chmodSync, closeSync, fstatSync, mkdtempSync, openSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startSimulator } from "../../src/testbed/simulator/server.js";
import { startEventHubsEmulator } from "../../src/testbed/peers/eventhubs/server.js";
import { cliPath, logLines, runCli, waitForMetricsUrl, waitUntil } from "../helpers/agent-process.js";
import { journalPriorities } from "../../src/agent/observability/logger.js";
import { secretFileWarning } from "../../src/agent/config/secret-file.js";
import { loadConfig } from "../../src/agent/config/load.js";

const observabilityDoc = readFileSync(new URL("../../src/agent/observability/README.md", import.meta.url), "utf8");
const levelNames = Object.keys(journalPriorities);

/** The `sef_*` series the agent's observability doc (src/agent/observability/README.md) documents. */
function documentedSeries(): string[] {
  return [...new Set([...observabilityDoc.matchAll(/`(sef_[a-z_]+)(?:\{[a-z_,]+\})?`/g)].map((m) => m[1]!))];
}

describe("logs and metrics of the running agent", () => {
  it("writes only JSON lines with level names, and serves every documented series and process metrics from the start", async () => {
    const sim = await startSimulator({ scenario: "idle" });
    const dir = mkdtempSync(join(tmpdir(), "sef-obs-"));
    const agent = runCli(
      [
        "run",
        "--imds-url",
        sim.url,
        "--data-dir",
        join(dir, "data"),
        "--sink",
        `jsonl:${join(dir, "out.jsonl")}`,
        "--log-level",
        "debug",
      ],
      {
        // A JOURNAL_STREAM that is not this stderr (a child of a systemd service, redirected): no prefixes.
        env: { SEF_METRICS_PORT: "0", JOURNAL_STREAM: "0:0" },
      },
    );
    let metrics = "";
    try {
      const url = await waitForMetricsUrl(agent);
      metrics = await (await fetch(`${url}/metrics`)).text();
      expect(await agent.stop("SIGTERM")).toBe(0);
    } finally {
      await agent.stop("SIGKILL");
      await sim.close();
    }
    const lines = agent
      .stderr()
      .split("\n")
      .filter((l) => l !== "");
    expect(lines.length).toBeGreaterThan(3);
    for (const line of lines) {
      const parsed = JSON.parse(line) as { level: unknown };
      expect(levelNames, line).toContain(parsed.level);
    }
    const series = documentedSeries();
    expect(series.length).toBeGreaterThanOrEqual(18);
    for (const name of series)
      expect(metrics, name).toMatch(new RegExp(`^${name}(_bucket|_count|_sum)?(\\{[^}]*\\})? `, "m"));
    for (const line of [
      'sef_polls_total{outcome="timeout"} 0',
      'sef_records_total{type="MalformedEvent"} 0',
      'sef_imds_events_malformed_total{reason="resources"} 0',
      'sef_hooks_total{outcome="timed_out"} 0',
      'sef_approvals_total{outcome="dry_run"} 0',
      `sef_sink_dead_letters_total{sink="jsonl:${join(dir, "out.jsonl")}"} 0`,
    ]) {
      expect(metrics).toContain(line);
    }
    for (const name of [
      "process_cpu_seconds_total",
      "process_resident_memory_bytes",
      "nodejs_eventloop_lag_seconds",
      "process_open_fds",
    ]) {
      expect(metrics, name).toMatch(new RegExp(`^${name} \\d`, "m"));
    }
  });

  it("prefixes each line with its journald priority when stderr is the journal stream (JOURNAL_STREAM)", async () => {
    const sim = await startSimulator({ scenario: "idle" });
    const dir = mkdtempSync(join(tmpdir(), "sef-journal-"));
    const logPath = join(dir, "stderr.log");
    const fd = openSync(logPath, "w");
    const stat = fstatSync(fd, { bigint: true });
    const child = spawn(
      process.execPath,
      [
        cliPath,
        "run",
        "--imds-url",
        sim.url,
        "--data-dir",
        join(dir, "data"),
        "--sink",
        "stdout",
        "--log-level",
        "debug",
      ],
      {
        env: { ...process.env, SEF_METRICS_PORT: "0", JOURNAL_STREAM: `${stat.dev}:${stat.ino}` },
        stdio: ["ignore", "ignore", fd],
      },
    );
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    try {
      await waitUntil(
        () => readFileSync(logPath, "utf8").includes("endpoints listening"),
        15_000,
        "the agent to start",
      );
      child.kill("SIGTERM");
      await exited;
    } finally {
      child.kill("SIGKILL");
      closeSync(fd);
      await sim.close();
    }
    const lines = readFileSync(logPath, "utf8")
      .split("\n")
      .filter((l) => l !== "");
    expect(lines.length).toBeGreaterThan(3);
    for (const line of lines) {
      const match = /^<(\d)>(\{.*\})$/.exec(line);
      expect(match, line).not.toBeNull();
      const level = (JSON.parse(match![2]!) as { level: string }).level;
      expect(Number(match![1]), line).toBe(journalPriorities[level]);
    }
    expect(lines.some((l) => l.startsWith("<6>"))).toBe(true);
  });

  it("never prints the SAS key or a signature, with DEBUG=rhea* and trace logs, while sending to Event Hubs", async () => {
    const sasKey = "c2VmLXRlc3Qtc2FzLWtleS0xMjM0NTY3ODkwYWJjZGVm";
    const hub = await startEventHubsEmulator({
      hubName: "sef-secrets",
      sharedAccessKeyName: "send",
      sharedAccessKey: sasKey,
    });
    const sim = await startSimulator({ scenario: "two-events", speed: 600 });
    const dir = mkdtempSync(join(tmpdir(), "sef-secrets-"));
    const agent = runCli(
      [
        "run",
        "--imds-url",
        sim.url,
        "--poll-interval-ms",
        "200",
        "--data-dir",
        join(dir, "data"),
        "--sink",
        "eventhubs",
        "--log-level",
        "trace",
      ],
      {
        env: {
          SEF_METRICS_PORT: "0",
          SEF_EVENTHUBS_CONNECTION_STRING: hub.connectionString,
          DEBUG: "rhea*,rhea-promise*,azure*",
          AZURE_LOG_LEVEL: "verbose",
        },
      },
    );
    try {
      await waitUntil(() => hub.events().length >= 2, 30_000, "records delivered to the hub");
      expect(await agent.stop("SIGTERM")).toBe(0);
    } finally {
      await agent.stop("SIGKILL");
      await sim.close();
      await hub.close();
    }
    const output = agent.stdout() + agent.stderr();
    expect(
      logLines(agent.stderr()).some((l) => typeof l.namespace === "string" && String(l.namespace).startsWith("rhea")),
      "rhea debug output is logged",
    ).toBe(true);
    expect(output).not.toContain(sasKey);
    expect(output).not.toMatch(/sig=(?!\[REDACTED\])/);
    expect(output).not.toMatch(/SharedAccessSignature (?!\[REDACTED\])/);
    expect(output).not.toContain(Buffer.from("SharedAccessSignature").toString("hex"));
    expect(output).not.toContain([...Buffer.from("SharedAccessSig")].join(","));
    for (const line of agent
      .stderr()
      .split("\n")
      .filter((l) => l !== ""))
      expect(() => JSON.parse(line), line).not.toThrow();
  });

  it("warns at start when the config file holds a secret and others may read it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sef-secret-file-"));
    const file = join(dir, "config.json");
    const connectionString =
      "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=send;SharedAccessKey=c2VjcmV0;EntityPath=hub";
    writeFileSync(
      file,
      JSON.stringify({ dataDir: join(dir, "data"), sinks: ["stdout"], eventhubs: { connectionString } }),
    );
    chmodSync(file, 0o644);
    const sim = await startSimulator({ scenario: "idle" });
    const agent = runCli(["run", "--config", file, "--imds-url", sim.url], { env: { SEF_METRICS_PORT: "0" } });
    try {
      await waitForMetricsUrl(agent);
    } finally {
      await agent.stop("SIGKILL");
      await sim.close();
    }
    const warning = logLines(agent.stderr()).find((l) => /config file holds a secret/.test(String(l.msg)));
    expect(warning).toMatchObject({ level: "warn", file, mode: "0644", settings: ["eventhubs.connectionString"] });
    expect(agent.stderr()).not.toContain("c2VjcmV0");

    chmodSync(file, 0o640);
    expect(secretFileWarning(file, loadConfig({ file, env: {} }).config)).toBeUndefined();
  });
});
