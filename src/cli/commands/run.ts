// `sef run`: the agent. Flags override SEF_* variables, which override the config file, which overrides defaults.
import { setFlagsFromString } from "node:v8";
import type { Command } from "commander";
import { ConfigError } from "../../config/load.js";
import type { AgentConfig } from "../../config/schema.js";
import { createLogger } from "../../observability/logger.js";
import { parseSinkSpec, findSinkFactory } from "../../sinks/registry.js";
import type { Sink } from "../../sinks/sink.js";
import { Agent } from "../../agent/agent.js";
import { systemClock } from "../../util/clock.js";
import { agentVersion } from "../../contract/agent-version.js";
import { StoreError } from "../../store/errors.js";
import { startAgentServices } from "../../agent/services.js";
import { AgentMetrics } from "../../observability/metrics.js";
import { routeDebugOutput } from "../../observability/debug-output.js";
import { secretFileWarning } from "../../config/secret-file.js";
import { addConfigOptions, exitCodes, loadFromOptions, reportConfigError } from "../config-options.js";

export { exitCodes } from "../config-options.js";

export function registerRunCommand(program: Command): void {
  addConfigOptions(program.command("run").description("run the agent: poll IMDS scheduled events and forward transitions to the sinks")).action(
    async (opts: Record<string, unknown>) => {
      process.exitCode = await runAgent(opts);
    },
  );
}

async function runAgent(opts: Record<string, unknown>): Promise<number> {
  // undici parses HTTP with a WebAssembly module compiled at the first request; letting V8's optimizing tier
  // recompile it costs a ~35 MB transient peak for nothing the agent needs (one small request a second).
  setFlagsFromString("--liftoff-only");
  let loaded;
  try {
    loaded = loadFromOptions(opts);
  } catch (err) {
    if (err instanceof ConfigError) return reportConfigError(err);
    throw err;
  }
  const { config, sinkSettings } = loaded;
  const logger = createLogger({ level: config.logLevel });
  await routeDebugOutput(logger);
  const exposed = secretFileWarning(loaded.file, config);
  if (exposed !== undefined) {
    logger.warn(exposed, `config file holds a secret and other users may read it: chmod o-r ${exposed.file} (or move the secret to an environment variable)`);
  }
  const metrics = new AgentMetrics({ processMetrics: true });
  const sinks: Sink[] = [];
  let agent: Agent;
  try {
    for (const spec of config.sinks) {
      const { type, argument } = parseSinkSpec(spec);
      sinks.push(await findSinkFactory(type).create({ argument, settings: sinkSettings[type], context: { logger, dataDir: config.dataDir, agentVersion, metrics } }));
    }
    metrics.initSinks(sinks.map((s) => s.name));
    agent = new Agent({ config, sinks, logger, clock: systemClock, agentVersion, metrics });
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

  let services: Awaited<ReturnType<typeof startAgentServices>>;
  try {
    await agent.prepare();
    services = await startAgentServices(agent, config, logger);
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
  agent.start();
  await new Promise<void>((resolve) => {
    const onSignal = (signal: NodeJS.Signals): void => {
      logger.info({ signal }, "stopping");
      process.off("SIGTERM", onSignal);
      process.off("SIGINT", onSignal);
      resolve();
    };
    process.on("SIGTERM", onSignal);
    process.on("SIGINT", onSignal);
  });
  await agent.stop();
  await services.stop();
  return exitCodes.ok;
}

/** A metrics/health port that cannot be bound is a configuration problem (exit 2): the message names the address. */
function metricsBindProblem(err: unknown, config: AgentConfig): string | undefined {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (code !== "EADDRINUSE" && code !== "EACCES" && code !== "EADDRNOTAVAIL") return undefined;
  const port = config.metricsPort ?? config.metrics.port;
  const why = code === "EADDRINUSE" ? "is already in use" : code === "EACCES" ? "may not be bound by this user" : "is not an address of this machine";
  return (
    `metrics.port: ${config.metrics.host}:${port} ${why} (${code}); ` +
    `set metrics.port, --metrics-port or SEF_METRICS_PORT to a free port, or metrics.enabled to false`
  );
}
