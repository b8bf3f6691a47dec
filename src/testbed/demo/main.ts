// `npm start`: the whole pipeline on one machine. Starts the IMDS simulator on a built-in scenario at high speed,
// the local Event Hubs and Logs Ingestion peers, and the agent with every sink; prints records as they flow and
// a summary of what each sink received. Exits 0 when every sink got every record.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, existsSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startSimulator } from "../simulator/server.js";
import { startEventHubsEmulator } from "../peers/eventhubs/server.js";
import { startLogsIngestionEmulator } from "../peers/logs-ingestion/index.js";
import type { SefRecord } from "@sef/contract/record.js";

const scenarioName = process.argv[2] ?? process.env.SEF_DEMO_SCENARIO ?? "live-migration";
/**
 * The agent's `sef` command, run as a child process (the testbed imports none of the agent's code): SEF_DEMO_AGENT_CLI,
 * else the agent workspace's build beside this one (src/agent/dist/ from src/testbed/dist/demo/).
 */
const cliPath = process.env.SEF_DEMO_AGENT_CLI ?? fileURLToPath(new URL("../../../agent/dist/cli/main.js", import.meta.url));
const color = process.stdout.isTTY ? (code: number, text: string) => `\u001b[${code}m${text}\u001b[0m` : (_: number, text: string) => text;

function describe(record: SefRecord): string {
  const time = record.TimeGenerated.slice(11, 23);
  if (record.RecordType === "Transition") {
    const status = record.EventStatus.padEnd(9);
    const impact = record.AffectsThisVm ? "this VM" : "neighbour";
    const notBefore = record.NotBefore ? ` not before ${record.NotBefore.slice(11, 19)}Z` : "";
    const gap = record.ObservationGap ? color(33, " (observation gap)") : "";
    return `${time}  ${color(36, status)} ${record.EventType.padEnd(9)} ${record.EventId.slice(0, 8)}…  ${impact}${notBefore}${gap}`;
  }
  return `${time}  ${color(90, record.RecordType)}`;
}

/** Runs `sef tail eventhubs --from-start` and counts the records it prints. */
function tailEventHubs(connectionString: string, expected: number): Promise<number> {
  return new Promise((resolve) => {
    const tail = spawn(process.execPath, [cliPath, "tail", "eventhubs", "--from-start", "--max", String(Math.max(1, expected)), "--timeout-ms", "10000"], {
      env: { ...process.env, SEF_EVENTHUBS_CONNECTION_STRING: connectionString },
      stdio: ["ignore", "pipe", "ignore"],
    });
    let out = "";
    tail.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    tail.on("exit", () => resolve(out.split("\n").filter((l) => l.trim().startsWith("{")).length));
  });
}

async function main(): Promise<number> {
  if (!existsSync(cliPath)) {
    console.error(`the agent's sef command is not built at ${cliPath} (run npm run build, or set SEF_DEMO_AGENT_CLI)`);
    return 1;
  }
  const dir = mkdtempSync(join(tmpdir(), "sef-demo-"));
  const sim = await startSimulator({ scenario: scenarioName });
  const hub = await startEventHubsEmulator({ hubName: "scheduled-events", partitionCount: 2 });
  const logs = await startLogsIngestionEmulator({ caCertPath: join(dir, "logs-ingestion-ca.pem") });
  const jsonlPath = join(dir, "records.jsonl");
  const configPath = join(dir, "config.json");
  writeFileSync(
    configPath,
    JSON.stringify(
      {
        imdsUrl: sim.url,
        pollIntervalMs: 200,
        dataDir: join(dir, "data"),
        sinks: ["stdout", `jsonl:${jsonlPath}`, "eventhubs", "loganalytics"],
        heartbeatIntervalMs: 0,
        metricsPort: 0,
        logLevel: "warn",
        eventhubs: { lingerMs: 20 },
        loganalytics: { endpoint: logs.endpoint, ruleId: logs.ruleId, streamName: logs.streamName, credential: "managedIdentity", caCertFile: logs.caCertPath, lingerMs: 100 },
      },
      null,
      2,
    ),
  );

  console.log(color(1, `sef demo: scenario "${sim.scenario.name}" at ${sim.speed}x — ${sim.scenario.description}`));
  console.log(`  IMDS simulator      ${sim.url}`);
  console.log(`  Event Hubs peer     ${hub.url} (hub ${hub.hubName})`);
  console.log(`  Logs Ingestion peer ${logs.endpoint} (rule ${logs.ruleId}, managed-identity tokens from the simulator)`);
  console.log(`  agent               sef run --config ${configPath}\n`);

  const agent = spawn(process.execPath, [cliPath, "run", "--config", configPath], {
    env: { ...process.env, SEF_EVENTHUBS_CONNECTION_STRING: hub.connectionString, AZURE_POD_IDENTITY_AUTHORITY_HOST: sim.url },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const stdoutRecords: SefRecord[] = [];
  let buffered = "";
  agent.stdout.on("data", (chunk: Buffer) => {
    buffered += chunk.toString();
    const lines = buffered.split("\n");
    buffered = lines.pop() ?? "";
    for (const line of lines.filter(Boolean)) {
      const record = JSON.parse(line) as SefRecord;
      stdoutRecords.push(record);
      console.log(describe(record));
    }
  });
  let agentLog = "";
  agent.stderr.on("data", (chunk: Buffer) => (agentLog += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => agent.on("exit", (code) => resolve(code)));

  await sim.waitForEnd();
  // Give the sinks time to drain what the last documents produced.
  const expected = sim.scenario.expect.length;
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline && (hub.events().length < expected || logs.rows().length < expected || stdoutRecords.length < expected)) {
    await new Promise((r) => setTimeout(r, 100));
  }
  agent.kill("SIGTERM");
  const code = await exited;

  // Read the hub back the way a person checking a pipeline would: `sef tail eventhubs` (async: the peer lives in this process).
  const readBack = await tailEventHubs(hub.connectionString, expected);

  const jsonl = existsSync(jsonlPath) ? readFileSync(jsonlPath, "utf8").trim().split("\n").filter(Boolean).length : 0;
  const counts: Array<[string, number]> = [
    ["stdout", stdoutRecords.length],
    [`jsonl (${jsonlPath})`, jsonl],
    ["Event Hubs peer", new Set(hub.events().map((e) => String(e.messageId))).size],
    ["Log Analytics peer", logs.rows().length],
    ["read back with sef tail eventhubs", readBack],
  ];
  console.log(color(1, `\nsummary: the scenario expects ${expected} transition records`));
  for (const [sink, n] of counts) console.log(`  ${sink.padEnd(40)} ${n} record(s) ${n === expected ? color(32, "ok") : color(31, "MISSING")}`);
  console.log(`  agent exit code                          ${code}`);

  await Promise.all([sim.close(), hub.close(), logs.close()]);
  const ok = code === 0 && counts.every(([, n]) => n === expected);
  if (!ok) console.error(`\nagent log (last 3000 characters):\n${agentLog.slice(-3000)}`);
  else rmSync(dir, { recursive: true, force: true });
  return ok ? 0 : 1;
}

process.exitCode = await main();
