// The agent is the data path, one stage per module: poll (poll-stage) → ingest (collect-stage: collect, commit through
// commit-stage, adopt) → the records-committed signal, followed by drain (drain-stage → delivery/), act (act-stage:
// hooks, approvals) and heartbeats (heartbeat-stage); and the document-read signal, followed by act. This module builds the stages, starts them, and owns the
// bounded, clean shutdown.
import type { Logger } from "pino";
import { join } from "node:path";
import type { AgentConfig } from "../config/schema.js";
import type { Clock } from "@sef/runtime/clock.js";
import type { RecordIdentity, SefRecord } from "@sef/contract/record.js";
import type { ReadinessSnapshot } from "../observability/http-server.js";
import { unknownVmIdentity } from "@sef/contract/record.js";
import type { Sink } from "../sinks/sink.js";
import type { OutboxEntry } from "../delivery/outbox-entry.js";
import type { ImdsEndpointSource } from "../imds/client.js";
import { Store } from "../store/store.js";
import { Outbox, type ReplayFrom } from "../delivery/outbox.js";
import { DeadLetterFile } from "../delivery/dead-letter.js";
import type { Drainer } from "../delivery/drainer.js";
import { AgentMetrics } from "../observability/metrics.js";
import { PollStage, type PollStats } from "./poll-stage.js";
import { CollectStage, type CollectStageOptions } from "./collect-stage.js";
import { CommitStage } from "./commit-stage.js";
import { reportParkedSinks } from "./parked-sinks.js";
import { DrainStage } from "./drain-stage.js";
import { ActStage } from "./act-stage.js";
import { HeartbeatStage } from "./heartbeat-stage.js";
import type { RecordsCommitted } from "./records-committed.js";
import { DocumentsRead } from "./documents-read.js";
import { loadOrCreateAgentId } from "./agent-id.js";
import { settlesWithin } from "../util/deadline.js";

/** How long each service (hooks, approvals, heartbeats) may take to stop. */
export const stopHookTimeoutMs = 1000;

export type { PollStats } from "./poll-stage.js";

export interface AgentDependencies {
  config: AgentConfig;
  sinks: Sink[];
  logger: Logger;
  clock: Clock;
  agentVersion: string;
  metrics?: AgentMetrics;
  /** `--replay-from`: make the records still held from this point on pending again for every configured sink. */
  replayFrom?: ReplayFrom;
  /**
   * The discovered IMDS endpoint (imds/discovery); without it the client uses `imdsUrl` or the link-local default.
   * Its `snapshot` (when it has one) names the endpoint's source in heartbeats.
   */
  imdsEndpoint?: ImdsEndpointSource & { snapshot?(): { source: string | null } };
}

/** This installation's agent id, created on first start (or when its file was unreadable, which is logged). */
function agentIdOf(dataDir: string, logger: Logger): string {
  const id = loadOrCreateAgentId(dataDir);
  if (id.replaced !== undefined)
    logger.warn({ agentId: id.agentId, reason: id.replaced }, "agent id file was unreadable: created a new agent id");
  else if (id.created) logger.info({ agentId: id.agentId }, "created the agent id of this installation");
  return id.agentId;
}

export class Agent {
  readonly metrics: AgentMetrics;
  readonly store: Store;
  readonly outbox: Outbox;
  private readonly poll: PollStage;
  private readonly collect: CollectStage;
  private readonly commit: CommitStage;
  private readonly drain: DrainStage;
  private readonly act: ActStage;
  private readonly heartbeat: HeartbeatStage;
  /** This installation's persisted id (agent-id.ts): in every record and RecordId. */
  readonly agentId: string;
  private readonly stopController = new AbortController();
  private readonly stopHooks: Array<() => Promise<void>> = [];
  /** Readiness: the last store write committed (never probed: a probe must not cost a transaction; the next write tells). */
  private lastStoreWriteCommitted = true;

  constructor(private readonly deps: AgentDependencies) {
    const { config, clock, logger } = deps;
    this.metrics = deps.metrics ?? new AgentMetrics();
    this.store = Store.open({
      dataDir: config.dataDir,
      onCheckpointError: (reason) => logger.warn({ reason }, "store checkpoint worker"),
      onWriteOutcome: (committed) => (this.lastStoreWriteCommitted = committed),
    });
    this.outbox = Outbox.open(this.store, { maxOutboxBytes: config.maxOutboxBytes });
    const sinkNames = this.registerSinks(deps.sinks.map((s) => s.name));
    this.agentId = agentIdOf(config.dataDir, logger);
    const deadLetters = new DeadLetterFile(join(config.dataDir, "dead-letter"));
    const metrics = this.metrics;
    const agentVersion = deps.agentVersion;
    const vm = (): RecordIdentity => this.vmIdentity;

    this.commit = new CommitStage({
      outbox: this.outbox,
      deadLetters,
      metrics,
      logger,
      clock,
      maxOutboxBytes: config.maxOutboxBytes,
    });
    const recallEmitted: CollectStageOptions["recallEmitted"] = (wanted) =>
      this.outbox.collectorState.emittedKeysOf(wanted);
    const documentsRead = new DocumentsRead();
    this.collect = new CollectStage(this.outbox.collectorState.load(), {
      config,
      commit: this.commit,
      vm,
      agentVersion,
      metrics,
      logger,
      recallEmitted,
      documentsRead,
    });
    this.poll = new PollStage(
      {
        config,
        clock,
        logger,
        metrics,
        ...(deps.imdsEndpoint ? { imdsEndpoint: deps.imdsEndpoint } : {}),
        initialVm: this.store.loadVmIdentity() ?? unknownVmIdentity,
        onIdentity: (identity) => this.store.saveVmIdentity(identity),
        onBlind: () => this.collect.observationGap(),
        ingest: (document, nowMs, clockStepMs) => this.collect.ingest(document, nowMs, clockStepMs),
      },
      this.stopController.signal,
    );
    this.readPollMetrics();
    // The followers of the records-committed signal, in the order they hear of a batch: drain, act, heartbeat.
    this.drain = new DrainStage({
      sinks: deps.sinks,
      outbox: this.outbox,
      committed: this.commit.committed,
      clock,
      retryPolicy: config.retry,
      deadLetters,
      logger,
      metrics,
    });
    this.act = this.createActStage(documentsRead, vm);
    this.heartbeat = this.createHeartbeatStage(vm);
    logger.info(
      {
        dataDir: config.dataDir,
        agentId: this.agentId,
        sinks: sinkNames,
        resumed: this.collect.resumed,
        knownEvents: this.collect.state.events.size,
        outbox: this.outbox.headSeq(),
      },
      "agent starting",
    );
  }

  /** Poll-side metrics are read when /metrics is scraped, not set on every poll. */
  private readPollMetrics(): void {
    const { poll, collect } = this;
    this.metrics.readPollsFrom({
      outcomes: poll.outcomes,
      lastGoodPollWallMs: () => poll.lastGoodPollWallMs,
      incarnation: () => poll.lastIncarnation,
      eventsWithStatus: (status) => collect.eventsWithStatus(status),
      conditional: () => poll.imds.conditionalCounts,
    });
  }

  /** The actions' stage: hooks, approvals and the Kubernetes node action, following committed records. */
  private createActStage(documentsRead: DocumentsRead, vm: () => RecordIdentity): ActStage {
    const { config, clock, logger, agentVersion } = this.deps;
    return new ActStage({
      config,
      store: this.store,
      outbox: this.outbox,
      commit: this.commit,
      documentsRead,
      postStartRequest: (ids, signal) => this.poll.imds.postStartRequests(ids, signal),
      vm,
      hasPolled: () => this.poll.stats.lastGoodPollMs !== null,
      clock,
      logger,
      metrics: this.metrics,
      agentVersion,
    });
  }

  /** The heartbeat stage, reading the other stages' figures when a heartbeat is due. */
  private createHeartbeatStage(vm: () => RecordIdentity): HeartbeatStage {
    const { config, clock, logger, agentVersion } = this.deps;
    const sources = {
      pollStats: () => this.poll.stats,
      collect: this.collect,
      drain: this.drain,
      metrics: this.metrics,
      imdsEndpointSource: () => this.deps.imdsEndpoint?.snapshot?.()?.source ?? null,
    };
    return new HeartbeatStage({
      intervalMs: config.heartbeatIntervalMs,
      commit: this.commit,
      vm,
      sources,
      agentVersion,
      clock,
      logger,
    });
  }

  /** The records-committed signal (each durable batch of outbox entries). */
  get committed(): RecordsCommitted {
    return this.commit.committed;
  }

  get drainers(): readonly Drainer[] {
    return this.drain.drainers;
  }

  /** The VM identity (last known from instance metadata) and this installation's AgentId, as records carry them. */
  get vmIdentity(): RecordIdentity {
    return { ...this.poll.vmIdentity, AgentId: this.agentId };
  }

  get pollStats(): Readonly<PollStats> {
    return this.poll.stats;
  }

  get agentVersion(): string {
    return this.deps.agentVersion;
  }

  /** Runs after polling stopped, before the actions and heartbeats stop and the sinks flush (e.g. IMDS discovery). */
  beforeStop(hook: () => Promise<void>): void {
    this.stopHooks.push(hook);
  }

  /** What /readyz judges: a fresh poll, a store whose last write went through, no sink stuck. Never writes; ages are monotonic. */
  readiness(): ReadinessSnapshot {
    const nowMs = this.deps.clock.monotonicMs();
    const { lastGoodPollMs } = this.poll.stats;
    return {
      lastGoodPollAgeMs: lastGoodPollMs === null ? null : nowMs - lastGoodPollMs,
      storeWritable: this.lastStoreWriteCommitted && !this.outbox.isEvictionBlocked(),
      sinks: this.drain.sinkHealth(nowMs),
    };
  }

  /** Records waiting per sink (O(1) counters). */
  undelivered(): Record<string, number> {
    return this.drain.undelivered();
  }

  /** Statistics carried in heartbeat records (see HeartbeatStage.stats). */
  heartbeatStats(): Promise<Record<string, unknown>> {
    return this.heartbeat.stats();
  }

  get stopSignal(): AbortSignal {
    return this.stopController.signal;
  }

  /** Reads the VM identity before anything emits records (bounded: never holds start-up more than a few seconds) and loads the configured actions. */
  async prepare(): Promise<void> {
    await this.poll.prepare();
    await this.act.prepare();
  }

  /** Starts the actions and the heartbeats (one at once), the sinks' drain loops, then polling. */
  start(): void {
    this.act.start();
    this.heartbeat.start();
    this.drain.start();
    this.poll.start();
  }

  /** One poll (tests and tools); returns how long after its start the next poll should begin. */
  pollOnce(): Promise<number> {
    return this.poll.pollOnce();
  }

  /** Appends records that are not transitions (tools and tests) through the commit stage. */
  appendRecords(records: readonly SefRecord[]): OutboxEntry[] {
    return this.commit.append(records);
  }

  /** Stops polling, lets each sink flush until the deadline, keeps the rest durably, closes everything. */
  async stop(): Promise<void> {
    const { config, clock, logger } = this.deps;
    if (this.stopController.signal.aborted) return;
    this.stopController.abort(new Error("agent stopping"));
    await this.poll.stopped();
    for (const hook of [...this.stopHooks, () => this.act.stop(), () => this.heartbeat.stop()]) {
      const stopped = hook().catch((err: unknown) => logger.warn({ err }, "stopping a service failed"));
      if (!(await settlesWithin(stopped, stopHookTimeoutMs)))
        logger.warn({ timeoutMs: stopHookTimeoutMs }, "a service did not stop in time; leaving it");
    }
    await this.drain.stop(clock.monotonicMs() + config.shutdownFlushMs);
    const left = this.drain.undelivered();
    await this.poll.close();
    this.store.close();
    logger.info({ left }, "agent stopped");
  }

  /** Registers the configured sinks in the outbox (parking the ones no longer configured, replaying on `--replay-from`); returns their names. */
  private registerSinks(sinkNames: string[]): string[] {
    const { config, clock, logger, replayFrom } = this.deps;
    const parkedBefore = this.outbox.parkedSinks();
    const added = this.outbox.registerSinks(sinkNames, clock.now());
    reportParkedSinks(parkedBefore, this.outbox.parkedSinks(), config.dataDir, logger, this.metrics);
    if (added.length > 0 && this.outbox.headSeq() > 0) {
      logger.info(
        { sinks: added },
        "new sinks start at the head of the outbox (records already held are not sent to them; see --replay-from)",
      );
    }
    if (replayFrom) {
      for (const sink of sinkNames) {
        const replayed = this.outbox.backfill(sink, replayFrom);
        logger.info({ sink, replayed, from: replayFrom }, "replaying records still held in the outbox (--replay-from)");
      }
    }
    return sinkNames;
  }
}
