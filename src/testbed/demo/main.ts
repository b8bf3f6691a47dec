// `npm start`: the whole pipeline on one machine. Starts the IMDS simulator on a built-in scenario at high speed,
// the local Event Hubs and Logs Ingestion peers, and the agent with every sink; prints records as they flow and
// a summary of what each sink received. Exits 0 when every sink got every record.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, existsSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { startSimulator, type Simulator } from "../simulator/server.js";
import { startEventHubsEmulator, type EventHubsEmulator } from "../peers/eventhubs/server.js";
import { startLogsIngestionEmulator, type LogsIngestionEmulator } from "../peers/logs-ingestion/index.js";
import type { SefRecord } from "@sef/contract/record.js";

const scenarioName = process.argv[2] ?? process.env.SEF_DEMO_SCENARIO ?? "live-migration";
/**
 * The agent's `sef` command, run as a child process (the testbed imports none of the agent's code): SEF_DEMO_AGENT_CLI,
 * else the `sef` command of the agent package `sef` (a declared dependency), found through that package's bin entry.
 */
const cliPath = process.env.SEF_DEMO_AGENT_CLI ?? agentCliPath();

function agentCliPath(): string {
  const manifestPath = fileURLToPath(import.meta.resolve("sef/package.json"));
  const manifest = JSON.parse(readFileSync(manifestPath, "utf8")) as { bin: { sef: string } };
  return join(dirname(manifestPath), manifest.bin.sef);
}
const color = process.stdout.isTTY
  ? (code: number, text: string) => `\u001b[${code}m${text}\u001b[0m`
  : (_: number, text: string) => text;

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
    const tail = spawn(
      process.execPath,
      [cliPath, "tail", "eventhubs", "--from-start", "--max", String(Math.max(1, expected)), "--timeout-ms", "10000"],
      {
        env: { ...process.env, SEF_EVENTHUBS_CONNECTION_STRING: connectionString },
        stdio: ["ignore", "pipe", "ignore"],
      },
    );
    let out = "";
    tail.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    tail.on("exit", () => resolve(out.split("\n").filter((l) => l.trim().startsWith("{")).length));
  });
}

/** The demo's peers: the IMDS simulator and the local Event Hubs and Logs Ingestion peers. */
interface Peers {
  readonly sim: Simulator;
  readonly hub: EventHubsEmulator;
  readonly logs: LogsIngestionEmulator;
}

async function startPeers(dir: string): Promise<Peers> {
  const sim = await startSimulator({ scenario: scenarioName });
  const hub = await startEventHubsEmulator({ hubName: "scheduled-events", partitionCount: 2 });
  const logs = await startLogsIngestionEmulator({ caCertPath: join(dir, "logs-ingestion-ca.pem") });
  return { sim, hub, logs };
}

/** Writes the agent's configuration (every sink, the peers as destinations) into `dir`; returns its path. */
function writeAgentConfig(dir: string, { sim, logs }: Peers, jsonlPath: string): string {
  const configPath = join(dir, "config.json");
  const config = {
    imdsUrl: sim.url,
    pollIntervalMs: 200,
    dataDir: join(dir, "data"),
    sinks: ["stdout", `jsonl:${jsonlPath}`, "eventhubs", "loganalytics"],
    heartbeatIntervalMs: 0,
    metricsPort: 0,
    logLevel: "warn",
    eventhubs: { lingerMs: 20 },
    loganalytics: {
      endpoint: logs.endpoint,
      ruleId: logs.ruleId,
      streamName: logs.streamName,
      credential: "managedIdentity",
      caCertFile: logs.caCertPath,
      lingerMs: 100,
    },
  };
  writeFileSync(configPath, JSON.stringify(config, null, 2));
  return configPath;
}

function printSetup({ sim, hub, logs }: Peers, configPath: string): void {
  console.log(color(1, `sef demo: scenario "${sim.scenario.name}" at ${sim.speed}x — ${sim.scenario.description}`));
  console.log(`  IMDS simulator      ${sim.url}`);
  console.log(`  Event Hubs peer     ${hub.url} (hub ${hub.hubName})`);
  console.log(
    `  Logs Ingestion peer ${logs.endpoint} (rule ${logs.ruleId}, managed-identity tokens from the simulator)`,
  );
  console.log(`  agent               sef run --config ${configPath}\n`);
}

/** The agent as a child process: the records it prints on stdout (each also printed here), its log, its exit. */
interface RunningAgent {
  readonly stdoutRecords: SefRecord[];
  readonly log: () => string;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>;
}

function startAgent({ sim, hub }: Peers, configPath: string): RunningAgent {
  const agent = spawn(process.execPath, [cliPath, "run", "--config", configPath], {
    env: {
      ...process.env,
      SEF_EVENTHUBS_CONNECTION_STRING: hub.connectionString,
      AZURE_POD_IDENTITY_AUTHORITY_HOST: sim.url,
    },
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
  let log = "";
  agent.stderr.on("data", (chunk: Buffer) => (log += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => agent.on("exit", (code) => resolve(code)));
  return {
    stdoutRecords,
    log: () => log,
    stop: () => {
      agent.kill("SIGTERM");
      return exited;
    },
  };
}

/** Waits (at most 10 s, monotonic) until every sink but jsonl holds `expected` records: the sinks drain the last documents. */
async function waitForSinks({ hub, logs }: Peers, agent: RunningAgent, expected: number): Promise<void> {
  const deadlineMs = performance.now() + 10_000;
  while (
    performance.now() < deadlineMs &&
    (hub.events().length < expected || logs.rows().length < expected || agent.stdoutRecords.length < expected)
  ) {
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** What each sink received (and `sef tail eventhubs` read back), printed against the scenario's count; true when all match. */
function printSummary(
  counts: ReadonlyArray<[string, number]>,
  expected: number,
  agentExitCode: number | null,
): boolean {
  console.log(color(1, `\nsummary: the scenario expects ${expected} transition records`));
  for (const [sink, n] of counts)
    console.log(`  ${sink.padEnd(40)} ${n} record(s) ${n === expected ? color(32, "ok") : color(31, "MISSING")}`);
  console.log(`  agent exit code                          ${agentExitCode}`);
  return agentExitCode === 0 && counts.every(([, n]) => n === expected);
}

async function main(): Promise<number> {
  if (!existsSync(cliPath)) {
    console.error(`the agent's sef command is not built at ${cliPath} (run npm run build, or set SEF_DEMO_AGENT_CLI)`);
    return 1;
  }
  const dir = mkdtempSync(join(tmpdir(), "sef-demo-"));
  const peers = await startPeers(dir);
  const jsonlPath = join(dir, "records.jsonl");
  const configPath = writeAgentConfig(dir, peers, jsonlPath);
  printSetup(peers, configPath);

  const agent = startAgent(peers, configPath);
  await peers.sim.waitForEnd();
  const expected = peers.sim.scenario.expect.length;
  await waitForSinks(peers, agent, expected);
  const code = await agent.stop();

  // Read the hub back the way a person checking a pipeline would: `sef tail eventhubs` (async: the peer lives in this process).
  const readBack = await tailEventHubs(peers.hub.connectionString, expected);
  const jsonl = existsSync(jsonlPath) ? readFileSync(jsonlPath, "utf8").trim().split("\n").filter(Boolean).length : 0;
  const ok = printSummary(
    [
      ["stdout", agent.stdoutRecords.length],
      [`jsonl (${jsonlPath})`, jsonl],
      ["Event Hubs peer", new Set(peers.hub.events().map((e) => String(e.messageId))).size],
      ["Log Analytics peer", peers.logs.rows().length],
      ["read back with sef tail eventhubs", readBack],
    ],
    expected,
    code,
  );

  await Promise.all([peers.sim.close(), peers.hub.close(), peers.logs.close()]);
  if (!ok) console.error(`\nagent log (last 3000 characters):\n${agent.log().slice(-3000)}`);
  else rmSync(dir, { recursive: true, force: true });
  return ok ? 0 : 1;
}

process.exitCode = await main();
