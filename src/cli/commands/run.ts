// `sef run`: the agent. Flags override SEF_* variables, which override the config file, which overrides defaults.
import { setFlagsFromString } from "node:v8";
import { Command, Option } from "commander";
import { loadConfig, ConfigError, environmentVariables } from "../../config/load.js";
import { createLogger } from "../../observability/logger.js";
import { sinkFactories, parseSinkSpec, findSinkFactory } from "../../sinks/registry.js";
import type { Sink } from "../../sinks/sink.js";
import { Agent } from "../../agent/agent.js";
import { systemClock } from "../../util/clock.js";
import { agentVersion } from "../../contract/agent-version.js";
import { StoreError } from "../../store/errors.js";
import type { ReplayFrom } from "../../store/store.js";
import { startAgentServices } from "../../agent/services.js";
import { AgentMetrics } from "../../observability/metrics.js";
import { EndpointDiscovery, type RememberedEndpoint } from "../../imds/discovery/index.js";
import { acquire as acquireDataDir, DataDirLockedError, lockFileName, type DataDirLock } from "../../store/data-dir-lock.js";
import { join } from "node:path";
import { settlesWithin } from "../../util/deadline.js";
import { listenForStop, type StopSignal } from "../stop-signal.js";

/** How long the process may linger after the agent stopped (open sockets to a peer that stopped answering). */
const exitGraceMs = 500;

/**
 * Exit codes: 0 clean stop, 2 bad configuration, 75 data directory in use by another sef (EX_TEMPFAIL: it may free up),
 * 78 store unusable (a supervisor should not restart in a loop).
 */
export const exitCodes = { ok: 0, config: 2, dataDirInUse: 75, store: 78, fatal: 1 } as const;

function integer(name: string) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n)) throw new Error(`${name} must be an integer, got "${value}"`);
    return n;
  };
}

export function registerRunCommand(program: Command): void {
  program
    .command("run")
    .description("run the agent: poll IMDS scheduled events and forward transitions to the sinks")
    .option("-c, --config <file>", "JSON config file (also SEF_CONFIG)")
    .option("--imds-url <url>", "IMDS base URL (default: discovered: 169.254.169.254, else DHCP option 245 sources)")
    .option("--api-version <version>", "scheduled events api-version (default 2020-07-01)")
    .option("--poll-interval-ms <n>", "poll period in ms (default 1000, min 200)", integer("--poll-interval-ms"))
    .option("--data-dir <dir>", "durable state and outbox directory (default /var/lib/sef)")
    .option("--sink <spec>", `sink, repeatable: ${sinkFactories.map((f) => f.summary).join("; ")}`, (v: string, prev: string[] | undefined) => [...(prev ?? []), v])
    .addOption(new Option("--log-level <level>", "log level (default info)").choices(["fatal", "error", "warn", "info", "debug", "trace", "silent"]))
    .option("--heartbeat-interval-ms <n>", "heartbeat record period in ms, 0 = off (default 900000)", integer("--heartbeat-interval-ms"))
    .option("--shutdown-flush-ms <n>", "how long SIGTERM may spend flushing sinks (default 5000)", integer("--shutdown-flush-ms"))
    .option("--metrics-port <n>", "port of the /metrics, /healthz, /readyz server on 127.0.0.1 (default 9464, 0 = any)", integer("--metrics-port"))
    .option("--replay-from <time|seq>", "send the records still held in the outbox from this ISO time or outbox sequence number on to every sink again (backfills a new sink)")
    .addHelpText(
      "after",
      `\nEnvironment variables:\n${Object.entries(environmentVariables)
        .map(([k, v]) => `  ${k.padEnd(28)} ${v.field}`)
        .join("\n")}\n\nExit codes: 0 stopped cleanly, 2 invalid configuration, 75 data directory in use by another sef, 78 store unusable, 1 unexpected failure.`,
    )
    .action(async (opts: Record<string, unknown>) => {
      const code = await runAgent(opts);
      process.exitCode = code;
      // Everything durable is done. A connection to a peer that stopped answering may keep the event loop alive:
      // exit anyway, after a moment for output still being written.
      setTimeout(() => process.exit(code), exitGraceMs).unref();
    });
}

async function runAgent(opts: Record<string, unknown>): Promise<number> {
  // undici parses HTTP with a WebAssembly module compiled at the first request; letting V8's optimizing tier
  // recompile it costs a ~35 MB transient peak for nothing the agent needs (one small request a second).
  setFlagsFromString("--liftoff-only");
  let loaded;
  try {
    loaded = loadConfig({
      file: opts.config as string | undefined,
      flags: {
        imdsUrl: opts.imdsUrl,
        apiVersion: opts.apiVersion,
        pollIntervalMs: opts.pollIntervalMs,
        dataDir: opts.dataDir,
        sinks: opts.sink,
        logLevel: opts.logLevel,
        heartbeatIntervalMs: opts.heartbeatIntervalMs,
        shutdownFlushMs: opts.shutdownFlushMs,
        metricsPort: opts.metricsPort,
      },
    });
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`sef: ${err.message}\n`);
      return exitCodes.config;
    }
    throw err;
  }
  const { config, sinkSettings } = loaded;
  let replayFrom: ReplayFrom | undefined;
  if (opts.replayFrom !== undefined) {
    replayFrom = parseReplayFrom(String(opts.replayFrom));
    if (!replayFrom) {
      process.stderr.write(`sef: --replay-from must be an ISO time (2024-05-01T12:00:00Z) or an outbox sequence number, got "${String(opts.replayFrom)}"\n`);
      return exitCodes.config;
    }
  }
  const logger = createLogger({ level: config.logLevel });
  const lock = lockDataDir(config.dataDir, logger);
  if (typeof lock === "number") return lock;
  try {
    return await runLocked(config, sinkSettings, logger, replayFrom);
  } finally {
    lock.release();
  }
}

/** Takes the data directory for this process, or says why not and returns the exit code. */
function lockDataDir(dataDir: string, logger: ReturnType<typeof createLogger>): DataDirLock | number {
  try {
    return acquireDataDir(dataDir);
  } catch (err) {
    const message =
      err instanceof DataDirLockedError
        ? err.message
        : `lock file ${join(dataDir, lockFileName)} cannot be written: ${(err as Error).message} (check the owner and mode of ${dataDir} and the files in it: the service user must be able to write them)`;
    logger.fatal({ dataDir, holderPid: err instanceof DataDirLockedError ? err.holderPid : undefined }, message);
    process.stderr.write(`sef: ${message}\n`);
    return err instanceof DataDirLockedError ? exitCodes.dataDirInUse : exitCodes.store;
  }
}

async function runLocked(
  config: ReturnType<typeof loadConfig>["config"],
  sinkSettings: ReturnType<typeof loadConfig>["sinkSettings"],
  logger: ReturnType<typeof createLogger>,
  replayFrom: ReplayFrom | undefined,
): Promise<number> {
  // Listening from the start: a SIGTERM during start-up is a clean stop (exit 0), not a death by signal.
  const stop = listenForStop(logger, config.shutdownFlushMs, exitCodes.ok);
  try {
    return await runUntilStopped(config, sinkSettings, logger, stop, replayFrom);
  } finally {
    stop.dispose();
  }
}

async function runUntilStopped(
  config: ReturnType<typeof loadConfig>["config"],
  sinkSettings: ReturnType<typeof loadConfig>["sinkSettings"],
  logger: ReturnType<typeof createLogger>,
  stop: StopSignal,
  replayFrom: ReplayFrom | undefined,
): Promise<number> {
  const metrics = new AgentMetrics();
  const sinks: Sink[] = [];
  let agent: Agent;
  let imdsEndpoint: EndpointDiscovery;
  try {
    for (const spec of config.sinks) {
      const { type, argument } = parseSinkSpec(spec);
      sinks.push(await findSinkFactory(type).create({ argument, settings: sinkSettings[type], context: { logger, dataDir: config.dataDir, agentVersion, metrics } }));
    }
    imdsEndpoint = new EndpointDiscovery({ explicitUrl: config.imdsUrl, settings: config.imdsDiscovery, clock: systemClock, logger, registry: metrics.registry });
    agent = new Agent({ config, sinks, logger, clock: systemClock, agentVersion, metrics, imdsEndpoint, ...(replayFrom ? { replayFrom } : {}) });
  } catch (err) {
    await Promise.all(sinks.map((s) => s.close().catch(() => undefined)));
    if (err instanceof StoreError) {
      logger.fatal({ path: err.path, reason: err.reason }, err.message);
      process.stderr.write(`sef: ${err.message}\n`);
      return exitCodes.store;
    }
    if (err instanceof ConfigError) {
      process.stderr.write(`sef: ${err.message}\n`);
      return exitCodes.config;
    }
    logger.fatal({ err }, "agent could not start");
    return exitCodes.fatal;
  }

  let services: Awaited<ReturnType<typeof startAgentServices>>;
  try {
    const store = agent.store;
    await Promise.race([imdsEndpoint.start({ load: () => store.loadImdsEndpoint() as RememberedEndpoint | undefined, save: (e) => store.saveImdsEndpoint(e) }), stop.arrived]);
    agent.beforeStop(() => imdsEndpoint.stop());
    if (!stop.requested) await Promise.race([agent.prepare(), stop.arrived]);
    if (stop.requested) {
      await agent.stop();
      return exitCodes.ok;
    }
    services = await startAgentServices(agent, config, logger, systemClock, imdsEndpoint);
    if (services.metricsUrl) process.stderr.write(`sef: metrics on ${services.metricsUrl}/metrics\n`);
  } catch (err) {
    await agent.stop();
    if (err instanceof ConfigError) {
      process.stderr.write(`sef: ${err.message}\n`);
      return exitCodes.config;
    }
    logger.fatal({ err }, "agent services could not start");
    return exitCodes.fatal;
  }
  if (!stop.requested) {
    agent.start();
    await stop.arrived;
  }
  await agent.stop();
  if (!(await settlesWithin(services.stop(), 1000))) logger.warn("metrics server did not close in time; leaving it");
  return exitCodes.ok;
}

/** `--replay-from`: a non-negative integer is an outbox sequence number, anything else must parse as a time. */
export function parseReplayFrom(text: string): ReplayFrom | undefined {
  if (/^\d+$/.test(text.trim())) return { seq: Number(text.trim()) };
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? undefined : { sinceMs: ms };
}
