// Heartbeat stage: the periodic Heartbeat records (observability/heartbeat.ts) with the statistics of the other stages,
// and the goodbye, written through the commit stage. Follows the records-committed signal for this VM's own departure
// (goodbye) or its cancellation (resume).
import type { Logger } from "pino";
import type { RecordIdentity, TransitionRecord } from "@sef/contract/record.js";
import type { Clock } from "@sef/runtime/clock.js";
import type { AgentMetrics } from "../observability/metrics.js";
import type { Counter } from "../observability/prom-client.js";
import { departureSignal, startHeartbeats, type HeartbeatHandle } from "../observability/heartbeat.js";
import type { CommitStage } from "./commit-stage.js";
import type { PollStats } from "./poll-stage.js";
import type { CollectStage } from "./collect-stage.js";
import type { DrainStage } from "./drain-stage.js";

/** Where the statistics in a heartbeat's Detail come from. */
export interface HeartbeatSources {
  readonly pollStats: () => Readonly<PollStats>;
  readonly collect: Pick<CollectStage, "state">;
  readonly drain: Pick<DrainStage, "undelivered">;
  readonly metrics: AgentMetrics;
  /** Where the IMDS endpoint was found (discovery), or null. */
  readonly imdsEndpointSource: () => string | null;
}

export interface HeartbeatStageOptions {
  /** 0 = no heartbeats (and no goodbye). */
  intervalMs: number;
  commit: CommitStage;
  vm: () => RecordIdentity;
  /** Read at each beat for the statistics in Detail. */
  sources: HeartbeatSources;
  agentVersion: string;
  clock: Clock;
  logger: Logger;
}

export class HeartbeatStage {
  private heartbeats: HeartbeatHandle | undefined;

  constructor(private readonly options: HeartbeatStageOptions) {
    options.commit.committed.follow((entries) => {
      const transitions = entries.flatMap((e) =>
        e.record.RecordType === "Transition" ? [e.record as TransitionRecord] : [],
      );
      const signal = transitions.length > 0 ? departureSignal(transitions) : undefined;
      if (signal?.kind === "goodbye") void this.heartbeats?.goodbye(signal.reason);
      else if (signal?.kind === "resume") void this.heartbeats?.resume();
    });
  }

  /**
   * Statistics carried in heartbeat records; `deadLettered`: records dead-lettered per sink since the agent started
   * (the fleet workbook's health view).
   */
  async stats(): Promise<Record<string, unknown>> {
    const { pollStats, collect, drain, metrics, imdsEndpointSource } = this.options.sources;
    const poll = pollStats();
    return {
      polls: poll.ok,
      failedPolls: poll.failed,
      lastError: poll.lastError,
      knownEvents: collect.state.events.size,
      incarnation: collect.state.lastIncarnation,
      undelivered: drain.undelivered(),
      imdsEndpointSource: imdsEndpointSource(),
      deadLettered: await countsBySink(metrics.deadLetters),
    };
  }

  /** Emits one heartbeat at once, then one every interval. */
  start(): void {
    const { intervalMs, clock, vm, agentVersion, logger, commit } = this.options;
    this.heartbeats ??= startHeartbeats({
      intervalMs,
      clock,
      vm,
      agentVersion,
      stats: () => this.stats(),
      emit: (record) => {
        commit.append([record]);
      },
      logger,
    });
  }

  /** Stops the beats and, when they had started, writes the goodbye of a clean shutdown. */
  async stop(): Promise<void> {
    await this.heartbeats?.stop("shutdown");
  }
}

/** A per-sink counter's values as `{ sink: count }`. */
async function countsBySink(counter: Counter<"sink">): Promise<Record<string, number>> {
  const { values } = await counter.get();
  return Object.fromEntries(values.map((v) => [String(v.labels.sink), v.value]));
}
