// `sef-testbed simulate`: a local IMDS (scheduled events GET/POST, instance metadata, managed-identity tokens) playing a scenario.
import { InvalidArgumentError, type Command } from "commander";
import { integerFrom, oneOf, parsePort } from "./options.js";
import { defaultSimulatorHost } from "../simulator/default-host.js";

export const defaultSimulatePort = 8169;
export const defaultScenarioName = "live-migration";

interface SimulateFlags {
  scenario: string;
  port: number;
  host: string;
  speed?: number;
  loop?: boolean;
  exitAtEnd?: boolean;
  startOn: "first-request" | "listen";
  list?: boolean;
  approvalDelayMs: number;
  tokenFault?: { count: number; status: number };
  logLevel: string;
}

/** `N*STATUS`: the first N token requests answered STATUS (e.g. `3*503`). */
function parseTokenFault(value: string): { count: number; status: number } {
  const match = /^(\d+)\*(\d{3})$/.exec(value);
  const count = Number(match?.[1]);
  const status = Number(match?.[2]);
  if (!match || count < 1 || status < 400 || status > 599)
    throw new InvalidArgumentError("expected N*STATUS, e.g. 3*503 (STATUS 400–599)");
  return { count, status };
}

function parseSpeed(value: string): number {
  const speed = Number(value);
  if (!Number.isFinite(speed) || speed <= 0) throw new InvalidArgumentError("expected a positive number");
  return speed;
}

async function runSimulate(flags: SimulateFlags): Promise<void> {
  const { listScenarios, loadScenario, ScenarioError, startSimulator } = await import("../simulator/index.js");
  const { createLogger } = await import("../support/logger.js");
  if (flags.list) {
    for (const scenario of listScenarios()) {
      process.stdout.write(`${scenario.name.padEnd(24)} ${scenario.description}\n`);
    }
    return;
  }
  const logger = createLogger({ level: flags.logLevel });
  let scenario;
  try {
    scenario = loadScenario(flags.scenario);
  } catch (err) {
    if (err instanceof ScenarioError) {
      process.stderr.write(`sef-testbed simulate: ${err.message}\n`);
      process.exitCode = 2;
      return;
    }
    throw err;
  }
  const simulator = await startSimulator({
    scenario,
    port: flags.port,
    host: flags.host,
    speed: flags.speed,
    loop: flags.loop ?? false,
    startOn: flags.startOn,
    approvalDelayMs: flags.approvalDelayMs,
    ...(flags.tokenFault ? { tokenFault: flags.tokenFault } : {}),
    logger,
  });
  process.stdout.write(`sef-testbed simulate listening on ${simulator.url}\n`);

  let stopping = false;
  const stop = (reason: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info({ reason }, "simulator stopping");
    void simulator.close().then(() => process.exit(0));
  };
  process.once("SIGTERM", () => stop("SIGTERM"));
  process.once("SIGINT", () => stop("SIGINT"));
  if (flags.exitAtEnd && !(flags.loop ?? false)) {
    void simulator.waitForEnd().then(() => stop("scenario ended"));
  }
}

export function registerSimulateCommand(program: Command): void {
  program
    .command("simulate")
    .description(
      "serve a local IMDS (Scheduled Events, instance metadata, managed-identity tokens) that plays a scenario",
    )
    .option("--scenario <name|file>", "built-in scenario name or path to a scenario JSON file", defaultScenarioName)
    .option("--port <n>", "TCP port (0 = any free port)", parsePort, defaultSimulatePort)
    .option("--host <host>", "address to bind", defaultSimulatorHost)
    .option("--speed <x>", "scenario seconds per wall-clock second (default: the scenario's own speed)", parseSpeed)
    .option("--loop", "restart the scenario when it ends")
    .option("--exit-at-end", "exit 0 when the scenario ends instead of serving the final document")
    .option(
      "--start-on <when>",
      "start scenario time at the first scheduled-events request (first-request) or at listen",
      oneOf(["first-request", "listen"] as const),
      "first-request",
    )
    .option(
      "--approval-delay-ms <ms>",
      "test-only: hold each StartRequests POST this long before applying and answering it",
      integerFrom(0),
      0,
    )
    .option(
      "--token-fault <N*STATUS>",
      "test-only: answer the first N managed-identity token requests with STATUS (e.g. 3*503)",
      parseTokenFault,
    )
    .option("--list", "list the built-in scenarios and exit")
    .option("--log-level <level>", "log level (logs go to stderr)", "info")
    .addHelpText(
      "after",
      `
Prints exactly one line to stdout once listening: "sef-testbed simulate listening on http://HOST:PORT".
Endpoints: /metadata/scheduledevents (GET, POST), /metadata/instance[/compute], /metadata/identity/oauth2/token.
Test-only extensions (not part of IMDS): header X-Sef-Sim-Vm: NAME picks the VM for /metadata/instance*;
GET /__sim/status, POST /__sim/document {"Events":[...]}, POST /__sim/advance {"seconds":N}.`,
    )
    .action(async (flags: SimulateFlags) => {
      await runSimulate(flags);
    });
}
