// The agent is the data path, one stage per module: poll (poll-stage) → collect (collect-stage) → commit
// (commit-stage, the only writer of records) → drain (drain-stage) and act (transition listeners: hooks, approvals).
// This module only wires them together and owns start-up and the bounded, clean shutdown.
import type { Logger } from "pino";
import { join } from "node:path";
import type { AgentConfig } from "../config/schema.js";
import type { Clock } from "../util/clock.js";
import type { RecordIdentity, SefRecord, TransitionRecord } from "@sef/contract/record.js";
import type { ReadinessSnapshot } from "../observability/http-server.js";
import { unknownVmIdentity } from "@sef/contract/record.js";
import type { OutboxEntry, Sink } from "../sinks/sink.js";
import type { ImdsClient, ImdsEndpointSource } from "../imds/client.js";
import type { ScheduledEventsDocument } from "../imds/document.js";
import { Store, type ReplayFrom, type StoreOptions } from "../store/store.js";
import { DeadLetterFile } from "../sinks/dead-letter.js";
import type { Drainer } from "../sinks/drainer.js";
import { AgentMetrics } from "../observability/metrics.js";
import { PollStage, type PollStats } from "./poll-stage.js";
import { CollectStage } from "./collect-stage.js";
import { CommitStage } from "./commit-stage.js";
import { DrainStage } from "./drain-stage.js";
import { loadOrCreateAgentId } from "./agent-id.js";
import { settlesWithin } from "../util/deadline.js";

/** How long each service (hooks, approvals, heartbeats) may take to stop. */
const stopHookTimeoutMs = 1000;

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
  /** Schema steps of modules keeping their own tables in the store's database (see StoreOptions.migrations). */
  storeMigrations?: StoreOptions["migrations"];
  /** The discovered IMDS endpoint (imds/discovery); without it the client uses `imdsUrl` or the link-local default. */
  imdsEndpoint?: ImdsEndpointSource;
}

export class Agent {
  readonly metrics: AgentMetrics;
  readonly store: Store;
  private readonly poll: PollStage;
  private readonly collect: CollectStage;
  private readonly commit: CommitStage;
  private readonly drain: DrainStage;
  /** This installation's persisted id (agent-id.ts): in every record and RecordId. */
  readonly agentId: string;
  private readonly stopController = new AbortController();
  private readonly transitionListeners: Array<(records: TransitionRecord[]) => void> = [];
  private readonly stopHooks: Array<() => Promise<void>> = [];
  /** Events approved by an agent of the previous layout (lower-cased EventId); the action ledger holds new ones. */
  readonly approvedEvents: { has(eventKey: string): boolean };

  constructor(private readonly deps: AgentDependencies) {
    const { config, clock, logger } = deps;
    this.metrics = deps.metrics ?? new AgentMetrics();
    this.store = Store.open({
      dataDir: config.dataDir,
      maxOutboxBytes: config.maxOutboxBytes,
      onCheckpointError: (reason) => logger.warn({ reason }, "store checkpoint worker"),
      ...(deps.storeMigrations ? { migrations: deps.storeMigrations } : {}),
    });
    const sinkNames = deps.sinks.map((s) => s.name);
    const added = this.store.registerSinks(sinkNames, clock.now());
    if (added.length > 0 && this.store.headSeq() > 0) {
      logger.info({ sinks: added }, "new sinks start at the head of the outbox (records already held are not sent to them; see --replay-from)");
    }
    if (deps.replayFrom) {
      for (const sink of sinkNames) {
        const replayed = this.store.backfill(sink, deps.replayFrom);
        logger.info({ sink, replayed, from: deps.replayFrom }, "replaying records still held in the outbox (--replay-from)");
      }
    }
    this.store.markAgentRunning(process.pid, clock.now());
    const id = loadOrCreateAgentId(config.dataDir);
    this.agentId = id.agentId;
    if (id.replaced !== undefined) logger.warn({ agentId: id.agentId, reason: id.replaced }, "agent id file was unreadable: created a new agent id");
    else if (id.created) logger.info({ agentId: id.agentId }, "created the agent id of this installation");
    const deadLetters = new DeadLetterFile(join(config.dataDir, "dead-letter"));
    this.approvedEvents = {
      has: (key) => this.store.isApproved(key),
    };

    this.collect = new CollectStage(this.store.loadCollectorState());
    this.commit = new CommitStage({ store: this.store, deadLetters, metrics: this.metrics, logger, clock, maxOutboxBytes: config.maxOutboxBytes });
    this.drain = new DrainStage({ sinks: deps.sinks, store: this.store, clock, retryPolicy: config.retry, deadLetters, logger, metrics: this.metrics });
    this.poll = new PollStage(
      {
        config,
        clock,
        logger,
        metrics: this.metrics,
        ...(deps.imdsEndpoint ? { imdsEndpoint: deps.imdsEndpoint } : {}),
        initialVm: this.store.loadVmIdentity() ?? unknownVmIdentity,
        onIdentity: (vm) => this.store.saveVmIdentity(vm),
        onBlind: () => this.collect.observationGap(),
        onDocument: (document, nowMs, clockStepMs) => this.onDocument(document, nowMs, clockStepMs),
      },
      this.stopController.signal,
    );
    this.commit.onCommitted((entries) => this.drain.wake(entries));
    this.commit.onCommitted((entries) => this.act(entries));
    logger.info(
      { dataDir: config.dataDir, agentId: this.agentId, sinks: sinkNames, resumed: this.collect.resumed, knownEvents: this.collect.state.events.size, outbox: this.store.headSeq() },
      "agent starting",
    );
  }

  get imds(): ImdsClient {
    return this.poll.imds;
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

  /** Called with the transition records of each document once they are durable (hooks, approvals). */
  onTransitions(listener: (records: TransitionRecord[]) => void): void {
    this.transitionListeners.push(listener);
  }

  /** Runs after polling stopped and before the sinks flush and the store closes (heartbeats, hooks). */
  beforeStop(hook: () => Promise<void>): void {
    this.stopHooks.push(hook);
  }

  /** What /readyz judges: a fresh poll, a store whose last write went through, no sink stuck. Never writes; ages are monotonic. */
  readiness(): ReadinessSnapshot {
    const nowMs = this.deps.clock.monotonicMs();
    const { lastGoodPollMs } = this.poll.stats;
    return {
      lastGoodPollAgeMs: lastGoodPollMs === null ? null : nowMs - lastGoodPollMs,
      storeWritable: this.store.isWritable(),
      sinks: this.drain.sinkHealth(nowMs),
    };
  }

  /** Records waiting per sink (O(1) counters). */
  undelivered(): Record<string, number> {
    return this.drain.undelivered();
  }

  /** Statistics carried in heartbeat records. */
  heartbeatStats(): Record<string, unknown> {
    const stats = this.poll.stats;
    return {
      polls: stats.ok,
      failedPolls: stats.failed,
      lastError: stats.lastError,
      knownEvents: this.collect.state.events.size,
      incarnation: this.collect.state.lastIncarnation,
      undelivered: this.drain.undelivered(),
    };
  }

  get stopSignal(): AbortSignal {
    return this.stopController.signal;
  }

  /** Reads the VM identity before anything emits records (bounded: never holds start-up more than a few seconds). */
  async prepare(): Promise<void> {
    await this.poll.prepare();
  }

  start(): void {
    this.drain.start();
    this.poll.start();
  }

  /** One poll (tests and tools); returns how long after its start the next poll should begin. */
  pollOnce(): Promise<number> {
    return this.poll.pollOnce();
  }

  /** Appends records that are not transitions (heartbeats, approvals, hooks) and wakes the sinks. */
  appendRecords(records: readonly SefRecord[]): OutboxEntry[] {
    return this.commit.append(records);
  }

  /** Stops polling, lets each sink flush until the deadline, keeps the rest durably, closes everything. */
  async stop(): Promise<void> {
    const { config, clock, logger } = this.deps;
    if (this.stopController.signal.aborted) return;
    this.stopController.abort(new Error("agent stopping"));
    await this.poll.stopped();
    for (const hook of this.stopHooks) {
      const stopped = hook().catch((err: unknown) => logger.warn({ err }, "stopping a service failed"));
      if (!(await settlesWithin(stopped, stopHookTimeoutMs))) logger.warn({ timeoutMs: stopHookTimeoutMs }, "a service did not stop in time; leaving it");
    }
    await this.drain.stop(clock.monotonicMs() + config.shutdownFlushMs);
    const left = this.drain.undelivered();
    await this.poll.close();
    try {
      this.store.markAgentStopped();
    } catch (err) {
      logger.warn({ err }, "could not record the agent's stop in the store");
    }
    this.store.close();
    logger.info({ left }, "agent stopped");
  }

  /** Collect → commit for one fetched document; returns whether it changed anything. */
  private onDocument(document: ScheduledEventsDocument, nowMs: number, clockStepMs: number): boolean {
    const { config, logger, agentVersion } = this.deps;
    const gapThresholdMs = config.gapThresholdMs ?? Math.max(5 * config.pollIntervalMs, 10_000);
    const result = this.collect.collect(document, {
      nowMs,
      vm: this.vmIdentity,
      agentVersion,
      // The collector measures gaps on wall time: after a step back, shorten the threshold by the step so a real
      // gap is still seen. A step forward is left as it is: it may be a VM pause catching up, worth flagging.
      gapThresholdMs: gapThresholdMs + Math.min(0, clockStepMs),
      emittedRetentionMs: config.emittedRetentionMs,
    });
    // An unchanged document changes nothing worth a disk write: keep the hot path free of fsyncs.
    const entries = result.changed ? this.commit.commitDocument(result.state, [...result.records, ...result.malformed], nowMs) : [];
    for (const m of result.malformed) {
      this.metrics.malformedEvents.inc({ reason: m.Outcome });
      logger.warn({ eventId: m.EventId, reason: m.Outcome, detail: m.Detail }, "IMDS listed an event that cannot be read; forwarded as a MalformedEvent record");
    }
    this.collect.adopt(result.state);
    for (const status of ["Scheduled", "Started"] as const) this.metrics.eventsByStatus.set({ status }, this.collect.eventsWithStatus(status));
    if (entries.length > 0) {
      logger.info({ records: entries.map((e) => `${(e.record as { EventId?: string }).EventId}:${(e.record as { EventStatus?: string }).EventStatus}`) }, "transitions recorded");
    }
    return result.changed;
  }

  /** Act stage: hand durable transition records to the listeners (hooks, approvals). */
  private act(entries: readonly OutboxEntry[]): void {
    const transitions = entries.flatMap((e) => (e.record.RecordType === "Transition" ? [e.record] : []));
    if (transitions.length > 0) for (const listener of this.transitionListeners) listener(transitions);
  }
}
