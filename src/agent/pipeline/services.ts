// Services around the poll loop: the metrics/health server, heartbeats, and actions (hooks, approvals).
// Each is configured from its own section and started/stopped with the agent.
import * as z from "zod/mini";
import type { Logger } from "pino";
import type { Counter } from "../observability/prom-client.js";
import type { Agent } from "./agent.js";
import type { AgentConfig } from "../config/schema.js";
import type { TransitionRecord } from "@sef/contract/record.js";
import { parseSection } from "../config/load.js";
import { metricsServerConfigSchema, readinessConfigSchema, startObservabilityServer, defaultReadinessLimits, type ReadinessSnapshot } from "../observability/http-server.js";
import { departureSignal, startHeartbeats } from "../observability/heartbeat.js";
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
export async function startAgentServices(
  agent: Agent,
  config: AgentConfig,
  logger: Logger,
  clock: Clock = systemClock,
  imdsEndpoint?: { snapshot(): ReadinessSnapshot["imdsEndpoint"] },
): Promise<AgentServices> {
  const metricsConfig = parseSection(config, "metrics", z._default(metricsServerConfigSchema, metricsServerConfigSchema.parse({})));
  const approval = parseSection(config, "approval", z._default(approvalPolicySchema, approvalPolicySchema.parse({})));
  const hooks = parseSection(config, "hooks", hooksConfigSchema);
  const readiness = parseSection(config, "readiness", z._default(readinessConfigSchema, readinessConfigSchema.parse({})));

  let server: Awaited<ReturnType<typeof startObservabilityServer>> | undefined;
  if (metricsConfig.enabled) {
    server = await startObservabilityServer({
      host: metricsConfig.host,
      port: config.metricsPort ?? metricsConfig.port,
      metrics: agent.metrics,
      readiness: () => ({ ...agent.readiness(), imdsEndpoint: imdsEndpoint?.snapshot() }),
      limits: defaultReadinessLimits(config.pollIntervalMs, readiness.sinkStallMs),
      logger,
    });
    logger.info({ url: server.url }, "metrics and health endpoints listening");
  }

  const ledger = agent.store.actions;
  if (ActionRunner.isNeeded(hooks, approval)) {
    const runner = new ActionRunner({
      hooks,
      approval,
      postStartRequest: (ids, signal) => agent.imds.postStartRequests(ids, signal),
      vm: () => agent.vmIdentity,
      ledger,
      append: (records) => {
        agent.appendRecords(records);
      },
      readAfter: (seq, limit) => agent.store.readAfter(seq, limit),
      headSeq: () => agent.store.headSeq(),
      hasPolled: () => agent.pollStats.lastGoodPollMs !== null,
      legacyApproved: agent.approvedEvents,
      clock,
      logger,
      metrics: agent.metrics,
      agentVersion: agent.agentVersion,
    });
    agent.onTransitions((records: TransitionRecord[]) => runner.enqueue(records));
    agent.beforeStop(() => runner.stop());
    runner.start();
  } else {
    // No actions configured: keep the planned position at the head, so actions configured later start from then.
    ledger.setPlannedThroughSeq(agent.store.headSeq());
    agent.onTransitions(() => ledger.setPlannedThroughSeq(agent.store.headSeq()));
  }

  const heartbeats = startHeartbeats({
    intervalMs: config.heartbeatIntervalMs,
    clock,
    vm: () => agent.vmIdentity,
    agentVersion: agent.agentVersion,
    // deadLettered: records dead-lettered per sink since the agent started (the fleet workbook's health view).
    stats: async () => ({
      ...agent.heartbeatStats(),
      imdsEndpointSource: imdsEndpoint?.snapshot()?.source ?? null,
      deadLettered: await countsBySink(agent.metrics.deadLetters),
    }),
    emit: (record) => {
      agent.appendRecords([record]);
    },
    logger,
  });
  // The goodbye (a Stopping heartbeat): on a clean shutdown, and when this VM's own Terminate/Preempt is announced.
  agent.onTransitions((records: TransitionRecord[]) => {
    const signal = departureSignal(records);
    if (signal?.kind === "goodbye") void heartbeats.goodbye(signal.reason);
    else if (signal?.kind === "resume") void heartbeats.resume();
  });
  agent.beforeStop(() => heartbeats.stop("shutdown"));

  return {
    metricsUrl: server?.url,
    stop: async () => {
      await server?.close();
    },
  };
}

/** A per-sink counter's values as `{ sink: count }`. */
async function countsBySink(counter: Counter<"sink">): Promise<Record<string, number>> {
  const { values } = await counter.get();
  return Object.fromEntries(values.map((v) => [String(v.labels.sink), v.value]));
}
