// Services around the poll loop: the metrics/health server, heartbeats, and actions (hooks, approvals).
// Each is configured from its own section and started/stopped with the agent.
import type { Logger } from "pino";
import type { Agent } from "./agent.js";
import type { AgentConfig } from "../config/schema.js";
import type { TransitionRecord } from "../contract/record.js";
import { parseSection } from "../config/load.js";
import { metricsServerConfigSchema, readinessConfigSchema, startObservabilityServer, defaultReadinessLimits } from "../observability/http-server.js";
import { startHeartbeats } from "../observability/heartbeat.js";
import { approvalPolicySchema } from "../actions/approval-policy.js";
import { hooksConfigSchema } from "../actions/hooks.js";
import { ActionRunner } from "../actions/action-runner.js";
import { systemClock, type Clock } from "../util/clock.js";

export interface AgentServices {
  /** The observability server's URL, when enabled. */
  readonly metricsUrl: string | undefined;
  stop(): Promise<void>;
}

/** Validates the service sections (throws ConfigError naming bad fields) and starts what they ask for. */
export async function startAgentServices(agent: Agent, config: AgentConfig, logger: Logger, clock: Clock = systemClock): Promise<AgentServices> {
  const metricsConfig = parseSection(config, "metrics", metricsServerConfigSchema.default(metricsServerConfigSchema.parse({})));
  const approval = parseSection(config, "approval", approvalPolicySchema.default(approvalPolicySchema.parse({})));
  const hooks = parseSection(config, "hooks", hooksConfigSchema);
  const readiness = parseSection(config, "readiness", readinessConfigSchema.default(readinessConfigSchema.parse({})));

  let server: Awaited<ReturnType<typeof startObservabilityServer>> | undefined;
  if (metricsConfig.enabled) {
    server = await startObservabilityServer({
      host: metricsConfig.host,
      port: config.metricsPort ?? metricsConfig.port,
      metrics: agent.metrics,
      readiness: () => agent.readiness(),
      limits: defaultReadinessLimits(config.pollIntervalMs, readiness.sinkStallMs),
      logger,
    });
    logger.info({ url: server.url }, "metrics and health endpoints listening");
  }

  if (ActionRunner.isNeeded(hooks, approval)) {
    const runner = new ActionRunner({
      hooks,
      approval,
      postStartRequest: (ids, signal) => agent.imds.postStartRequests(ids, signal),
      vm: () => agent.vmIdentity,
      append: (records) => agent.appendRecords(records),
      approved: agent.approvedEvents,
      clock,
      logger,
      metrics: agent.metrics,
      agentVersion: agent.agentVersion,
    });
    agent.onTransitions((records: TransitionRecord[]) => runner.enqueue(records));
    agent.beforeStop(() => runner.stop());
  }

  const heartbeats = startHeartbeats({
    intervalMs: config.heartbeatIntervalMs,
    clock,
    vm: () => agent.vmIdentity,
    agentVersion: agent.agentVersion,
    stats: () => agent.heartbeatStats(),
    emit: (record) => {
      agent.appendRecords([record]);
    },
    logger,
  });
  agent.beforeStop(() => heartbeats.stop());

  return {
    metricsUrl: server?.url,
    stop: async () => {
      await server?.close();
    },
  };
}
