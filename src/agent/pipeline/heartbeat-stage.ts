// Heartbeat stage: the periodic Heartbeat records (observability/heartbeat.ts) and the goodbye, written through the
// commit stage. Follows the records-committed signal for this VM's own departure (goodbye) or its cancellation (resume).
import type { Logger } from "pino";
import type { RecordIdentity, TransitionRecord } from "@sef/contract/record.js";
import type { Clock } from "../util/clock.js";
import { departureSignal, startHeartbeats, type HeartbeatHandle } from "../observability/heartbeat.js";
import type { CommitStage } from "./commit-stage.js";

export interface HeartbeatStageOptions {
  /** 0 = no heartbeats (and no goodbye). */
  intervalMs: number;
  commit: CommitStage;
  vm: () => RecordIdentity;
  /** Statistics for Detail, read at each beat. */
  stats: () => Promise<object>;
  agentVersion: string;
  clock: Clock;
  logger: Logger;
}

export class HeartbeatStage {
  private heartbeats: HeartbeatHandle | undefined;

  constructor(private readonly options: HeartbeatStageOptions) {
    options.commit.committed.follow((entries) => {
      const transitions = entries.flatMap((e) => (e.record.RecordType === "Transition" ? [e.record as TransitionRecord] : []));
      const signal = transitions.length > 0 ? departureSignal(transitions) : undefined;
      if (signal?.kind === "goodbye") void this.heartbeats?.goodbye(signal.reason);
      else if (signal?.kind === "resume") void this.heartbeats?.resume();
    });
  }

  /** Emits one heartbeat at once, then one every interval. */
  start(): void {
    const { intervalMs, clock, vm, agentVersion, stats, logger, commit } = this.options;
    this.heartbeats ??= startHeartbeats({
      intervalMs,
      clock,
      vm,
      agentVersion,
      stats,
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
