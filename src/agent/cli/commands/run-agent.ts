// `sef run` at work: loads the config, locks the data directory, starts the agent with its sinks and services, and runs
// it until a stop signal; returns the exit code. Flags override SEF_* variables, which override the config file, which
// overrides defaults.
import { join, resolve } from "node:path";
import { ConfigError } from "../../config/load.js";
import type { AgentConfig } from "../../config/schema.js";
import { createLogger } from "../../observability/logger.js";
import { parseSinkSpec, findSinkFactory } from "../../sinks/registry.js";
import type { Sink } from "../../sinks/sink.js";
import { Agent } from "../../pipeline/agent.js";
import { systemClock } from "@sef/runtime/clock.js";
import { agentVersion } from "../../agent-version.js";
import { StoreError } from "../../store/errors.js";
import type { ReplayFrom } from "../../delivery/outbox.js";
import { metricsAddress, startAgentServices } from "../../pipeline/services.js";
import { AgentMetrics } from "../../observability/metrics.js";
import { routeDebugOutput } from "../../observability/debug-output.js";
import { secretFileWarning } from "../../config/secret-file.js";
import { EndpointDiscovery, endpointMemoryIn } from "../../imds/discovery/index.js";
import {
  acquire as acquireDataDir,
  DataDirLockedError,
  lockFileName,
  type DataDirLock,
} from "../../store/data-dir-lock.js";
import { settlesWithin } from "../../util/deadline.js";
import { listenForStop, type StopSignal } from "../stop-signal.js";
import { shellCommand } from "../../util/sef-command-hint.js";
import { exitCodes, loadFromOptions, reportConfigError } from "../config-options.js";

type Logger = ReturnType<typeof createLogger>;
type SinkSettings = ReturnType<typeof loadFromOptions>["sinkSettings"];

export async function runAgent(opts: Record<string, unknown>): Promise<number> {
  let loaded;
  try {
    loaded = loadFromOptions(opts);
  } catch (err) {
    if (err instanceof ConfigError) return reportConfigError(err);
    throw err;
  }
  // The data directory absolute: every path the agent logs or prints in a hint then works from any directory.
  const config = { ...loaded.config, dataDir: resolve(loaded.config.dataDir) };
  const { sinkSettings } = loaded;
  let replayFrom: ReplayFrom | undefined;
  if (opts.replayFrom !== undefined) {
    replayFrom = parseReplayFrom(String(opts.replayFrom));
    if (!replayFrom)
      return reportConfigError(
        new ConfigError([
          `--replay-from: must be an ISO time (2024-05-01T12:00:00Z) or an outbox sequence number, got "${String(opts.replayFrom)}"`,
        ]),
      );
  }
  const logger = createLogger({ level: config.logLevel });
  // Listening from the first moment the agent can log: a SIGTERM during start-up is a clean stop (exit 0).
  const stop = listenForStop(logger, config.shutdownFlushMs, exitCodes.ok);
  try {
    await routeDebugOutput(logger);
    const exposed = secretFileWarning(loaded.file, config);
    if (exposed !== undefined) {
      const chmod = shellCommand(["chmod", "o-r", resolve(exposed.file)]);
      logger.warn(
        exposed,
        `config file holds a secret and other users may read it: ${chmod} (or move the secret to an environment variable)`,
      );
    }
    if (stop.requested) return exitCodes.ok;
    const lock = lockDataDir(config.dataDir, logger);
    if (typeof lock === "number") return lock;
    try {
      return await runUntilStopped(config, sinkSettings, logger, stop, replayFrom);
    } finally {
      lock.release();
    }
  } finally {
    stop.dispose();
  }
}

/** Takes the data directory for this process, or says why not and returns the exit code. */
function lockDataDir(dataDir: string, logger: Logger): DataDirLock | number {
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

async function runUntilStopped(
  config: AgentConfig,
  sinkSettings: SinkSettings,
  logger: Logger,
  stop: StopSignal,
  replayFrom: ReplayFrom | undefined,
): Promise<number> {
  const built = await buildAgent(config, sinkSettings, logger, replayFrom);
  if (typeof built === "number") return built;
  const { agent, imdsEndpoint } = built;
  let services: Awaited<ReturnType<typeof startAgentServices>>;
  try {
    await Promise.race([imdsEndpoint.start(endpointMemoryIn(agent.store.meta)), stop.arrived]);
    agent.beforeStop(() => imdsEndpoint.stop());
    if (!stop.requested) await Promise.race([agent.prepare(), stop.arrived]);
    if (stop.requested) {
      await agent.stop();
      return exitCodes.ok;
    }
    services = await startAgentServices(agent, config, logger, imdsEndpoint);
  } catch (err) {
    await agent.stop();
    if (err instanceof ConfigError) return reportConfigError(err);
    const bindProblem = metricsBindProblem(err, config);
    if (bindProblem !== undefined) {
      logger.fatal({ err }, bindProblem);
      return reportConfigError(new ConfigError([bindProblem]));
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

/** The sinks, the IMDS endpoint discovery and the agent, or the exit code of what stopped them being built. */
async function buildAgent(
  config: AgentConfig,
  sinkSettings: SinkSettings,
  logger: Logger,
  replayFrom: ReplayFrom | undefined,
): Promise<{ agent: Agent; imdsEndpoint: EndpointDiscovery } | number> {
  const metrics = new AgentMetrics({ processMetrics: true });
  const sinks: Sink[] = [];
  let agent: Agent;
  let imdsEndpoint: EndpointDiscovery;
  try {
    for (const spec of config.sinks) {
      const { type, argument } = parseSinkSpec(spec);
      sinks.push(
        await findSinkFactory(type).create({
          argument,
          settings: sinkSettings[type],
          context: { logger, dataDir: config.dataDir, agentVersion, metrics },
        }),
      );
    }
    metrics.initSinks(sinks.map((s) => s.name));
    imdsEndpoint = new EndpointDiscovery({
      explicitUrl: config.imdsUrl,
      settings: config.imdsDiscovery,
      apiVersion: config.apiVersion,
      clock: systemClock,
      logger,
      registry: metrics.registry,
    });
    agent = new Agent({
      config,
      sinks,
      logger,
      clock: systemClock,
      agentVersion,
      metrics,
      imdsEndpoint,
      ...(replayFrom ? { replayFrom } : {}),
    });
  } catch (err) {
    await Promise.all(sinks.map((s) => s.close().catch(() => undefined)));
    if (err instanceof StoreError) {
      logger.fatal({ path: err.path, reason: err.reason }, err.message);
      process.stderr.write(`sef: ${err.message}\n`);
      return exitCodes.store;
    }
    if (err instanceof ConfigError) return reportConfigError(err);
    logger.fatal({ err }, "agent could not start");
    return exitCodes.fatal;
  }
  return { agent, imdsEndpoint };
}

/** `--replay-from`: a non-negative integer is an outbox sequence number, anything else must parse as a time. */
export function parseReplayFrom(text: string): ReplayFrom | undefined {
  if (/^\d+$/.test(text.trim())) return { seq: Number(text.trim()) };
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? undefined : { sinceMs: ms };
}

/** A metrics/health port that cannot be bound is a configuration problem (exit 2): the message names the address. */
function metricsBindProblem(err: unknown, config: AgentConfig): string | undefined {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (code !== "EADDRINUSE" && code !== "EACCES" && code !== "EADDRNOTAVAIL") return undefined;
  const { host, port } = metricsAddress(config);
  if (code === "EADDRNOTAVAIL") {
    return `metrics.host: ${host}:${port} is not an address of this machine (${code}); set metrics.host, --metrics-host or SEF_METRICS_HOST to one, or metrics.enabled to false`;
  }
  const why = code === "EADDRINUSE" ? "is already in use" : "may not be bound by this user";
  return (
    `metrics.port: ${host}:${port} ${why} (${code}); ` +
    `set metrics.port, --metrics-port or SEF_METRICS_PORT to a free port, or metrics.enabled to false`
  );
}
