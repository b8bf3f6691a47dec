// The service beside the agent's stages: the metrics/health server (/metrics, /healthz, /readyz), configured from its
// own sections of the parsed configuration and closed after the agent stopped.
import type { Logger } from "pino";
import type { Agent } from "./agent.js";
import type { AgentConfig } from "../config/schema.js";
import {
  startObservabilityServer,
  defaultReadinessLimits,
  type ReadinessSnapshot,
} from "../observability/http-server.js";

export interface AgentServices {
  /** The observability server's URL, when enabled. */
  readonly metricsUrl: string | undefined;
  stop(): Promise<void>;
}

/** Where the observability server listens: `metricsHost`/`metricsPort` (flags, SEF_* variables) over the `metrics` section. */
export function metricsAddress(config: Pick<AgentConfig, "metrics" | "metricsHost" | "metricsPort">): {
  host: string;
  port: number;
} {
  return { host: config.metricsHost ?? config.metrics.host, port: config.metricsPort ?? config.metrics.port };
}

/** Starts the observability server when `metrics.enabled` (the sections were validated with the configuration). */
export async function startAgentServices(
  agent: Agent,
  config: AgentConfig,
  logger: Logger,
  imdsEndpoint?: { snapshot(): ReadinessSnapshot["imdsEndpoint"] },
): Promise<AgentServices> {
  if (!config.metrics.enabled) return { metricsUrl: undefined, stop: async () => undefined };
  const server = await startObservabilityServer({
    ...metricsAddress(config),
    bounds: config.metrics,
    metrics: agent.metrics,
    readiness: () => ({ ...agent.readiness(), imdsEndpoint: imdsEndpoint?.snapshot() }),
    limits: defaultReadinessLimits(config.pollIntervalMs, config.readiness.sinkStallMs),
    logger,
  });
  logger.info({ url: server.url }, "metrics and health endpoints listening");
  return { metricsUrl: server.url, stop: () => server.close() };
}
