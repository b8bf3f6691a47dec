// The agent: polls IMDS, turns documents into records through the collector, commits them to the store,
// and wakes one drain loop per sink. Owns start-up and the bounded, clean shutdown.
import type { Logger } from "pino";
import type { AgentConfig } from "../config/schema.js";
import type { Clock } from "../util/clock.js";
import type { RecordIdentity, SefRecord, TransitionRecord, VmIdentity } from "../contract/record.js";
import type { ReadinessSnapshot } from "../observability/http-server.js";
import { unknownVmIdentity } from "../contract/record.js";
import { isUrgent, type OutboxEntry, type Sink } from "../sinks/sink.js";
import { ImdsClient } from "../imds/client.js";
import { ImdsRequestError } from "../imds/errors.js";
import { Store } from "../store/store.js";
import { applyDocument, applyPollFailure, resumeAfterRestart } from "../collector/transitions.js";
import type { CollectorState } from "../collector/state.js";
import { Drainer } from "../sinks/drainer.js";
import { DeadLetterFile } from "../sinks/dead-letter.js";
import { AgentMetrics, type PollOutcome } from "../observability/metrics.js";
import { pollBackoffMs } from "./poll-backoff.js";
import { loadOrCreateAgentId } from "./agent-id.js";
import { join } from "node:path";

export interface AgentDependencies {
  config: AgentConfig;
  sinks: Sink[];
  logger: Logger;
  clock: Clock;
  agentVersion: string;
  metrics?: AgentMetrics;
}

export interface PollStats {
  ok: number;
  failed: number;
  consecutiveFailures: number;
  lastGoodPollMs: number | null;
  lastError: string | null;
}

export class Agent {
  readonly metrics: AgentMetrics;
  readonly store: Store;
  readonly imds: ImdsClient;
  readonly drainers: Drainer[];
  private state: CollectorState;
  private vm: VmIdentity;
  /** This installation's persisted id (agent-id.ts): in every record and RecordId. */
  readonly agentId: string;
  private readonly stopController = new AbortController();
  private pollLoop: Promise<void> | undefined;
  private readonly stats: PollStats = { ok: 0, failed: 0, consecutiveFailures: 0, lastGoodPollMs: null, lastError: null };
  private lastComputeMs = 0;
  /** Failed instance-metadata reads in a row: while the identity is unknown they are retried after 1, 2, 4 … 30 s. */
  private computeFailures = 0;
  private computeInFlight = false;
  private readonly deadLetters: DeadLetterFile;
  private readonly transitionListeners: Array<(records: TransitionRecord[]) => void> = [];
  private readonly stopHooks: Array<() => Promise<void>> = [];
  /** Events this VM approved (lower-cased EventId), persisted so a restart never approves twice. */
  readonly approvedEvents: { has(eventKey: string): boolean; add(eventKey: string): void };

  constructor(private readonly deps: AgentDependencies) {
    const { config, clock, logger } = deps;
    this.metrics = deps.metrics ?? new AgentMetrics();
    this.store = Store.open({ dataDir: config.dataDir, maxOutboxBytes: config.maxOutboxBytes });
    this.store.registerSinks(deps.sinks.map((s) => s.name));
    this.deadLetters = new DeadLetterFile(join(config.dataDir, "dead-letter"));
    const loaded = this.store.loadCollectorState();
    const hadState = loaded.lastSuccessMs !== null;
    this.state = hadState ? resumeAfterRestart(loaded) : loaded;
    this.vm = this.store.loadVmIdentity() ?? unknownVmIdentity;
    const id = loadOrCreateAgentId(config.dataDir);
    this.agentId = id.agentId;
    if (id.replaced !== undefined) logger.warn({ agentId: id.agentId, reason: id.replaced }, "agent id file was unreadable: created a new agent id");
    else if (id.created) logger.info({ agentId: id.agentId }, "created the agent id of this installation");
    this.approvedEvents = {
      has: (key) => this.store.isApproved(key),
      add: (key) => this.store.markApproved(key, clock.now()),
    };
    this.imds = new ImdsClient({
      imdsUrl: config.imdsUrl,
      apiVersion: config.apiVersion,
      firstCallTimeoutMs: config.imdsFirstCallTimeoutMs,
      requestTimeoutMs: config.imdsRequestTimeoutMs,
      maxBodyBytes: config.imdsMaxBodyBytes,
      clock,
      extraHeaders: config.imdsExtraHeaders,
      onRetry: (err, attempt) => {
        // Even a failure retried within the same poll left the agent blind for a moment: an observation gap.
        this.state = applyPollFailure(this.state);
        logger.warn({ kind: err.kind, status: err.status, attempt, err: err.message }, "IMDS request failed; retrying at once");
      },
    });
    this.drainers = deps.sinks.map(
      (sink) =>
        new Drainer({
          sink,
          store: this.store,
          clock,
          retryPolicy: config.retry,
          deadLetters: this.deadLetters,
          logger,
          metrics: this.metrics,
        }),
    );
    logger.info(
      { dataDir: config.dataDir, agentId: this.agentId, sinks: deps.sinks.map((s) => s.name), resumed: hadState, knownEvents: this.state.events.size, outbox: this.store.headSeq() },
      "agent starting",
    );
  }

  /** The VM identity (last known from instance metadata) and this installation's AgentId, as records carry them. */
  get vmIdentity(): RecordIdentity {
    return { ...this.vm, AgentId: this.agentId };
  }

  get pollStats(): Readonly<PollStats> {
    return this.stats;
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

  /** What /readyz judges: a fresh poll, a writable store, no sink stuck. */
  readiness(): ReadinessSnapshot {
    const nowMs = this.deps.clock.now();
    return {
      lastGoodPollAgeMs: this.stats.lastGoodPollMs === null ? null : nowMs - this.stats.lastGoodPollMs,
      storeWritable: this.store.isWritable(),
      sinks: this.drainers.map((d) => {
        const since = d.status().failingSinceMs;
        return { name: d.name, stuckForMs: since === null ? 0 : nowMs - since };
      }),
    };
  }

  /** Statistics carried in heartbeat records. */
  heartbeatStats(): Record<string, unknown> {
    return {
      polls: this.stats.ok,
      failedPolls: this.stats.failed,
      lastError: this.stats.lastError,
      knownEvents: this.state.events.size,
      incarnation: this.state.lastIncarnation,
      undelivered: Object.fromEntries(this.drainers.map((d) => [d.name, this.store.depth(d.name).records])),
    };
  }

  get stopSignal(): AbortSignal {
    return this.stopController.signal;
  }

  /** Reads the VM identity before anything emits records (bounded: never holds start-up more than a few seconds). */
  async prepare(): Promise<void> {
    await this.refreshIdentity(true);
  }

  start(): void {
    for (const drainer of this.drainers) drainer.start();
    this.pollLoop = this.runPollLoop().catch((err: unknown) => {
      this.deps.logger.fatal({ err }, "poll loop failed");
      throw err;
    });
  }

  /** Appends records that are not transitions (heartbeats, approvals, hooks) and wakes the sinks. */
  appendRecords(records: readonly SefRecord[]): OutboxEntry[] {
    const entries = this.store.append(records, this.deps.clock.now());
    for (const e of entries) this.metrics.recordsWritten.inc({ type: e.record.RecordType });
    this.afterCommit(entries);
    return entries;
  }

  /** Stops polling, lets each sink flush until the deadline, keeps the rest durably, closes everything. */
  async stop(): Promise<void> {
    const { config, clock, logger } = this.deps;
    if (this.stopController.signal.aborted) return;
    this.stopController.abort(new Error("agent stopping"));
    await this.pollLoop?.catch(() => undefined);
    for (const hook of this.stopHooks) await hook().catch((err: unknown) => logger.warn({ err }, "stopping a service failed"));
    const deadlineMs = clock.now() + config.shutdownFlushMs;
    await Promise.all(this.drainers.map((d) => d.stop(deadlineMs)));
    const left = this.drainers.map((d) => ({ sink: d.name, undelivered: this.store.depth(d.name).records }));
    await this.imds.close().catch(() => undefined);
    this.store.close();
    logger.info({ left }, "agent stopped");
  }

  private async runPollLoop(): Promise<void> {
    const { config, clock } = this.deps;
    const signal = this.stopController.signal;
    while (!signal.aborted) {
      const startedMs = clock.now();
      const unknownRetryMs = Math.min(30_000, 1000 * 2 ** Math.min(this.computeFailures, 5));
      if (startedMs - this.lastComputeMs >= (this.vm.VmId === "" ? unknownRetryMs : config.computeRefreshMs)) void this.refreshIdentity(false);
      const waitMs = await this.pollOnce();
      if (signal.aborted) break;
      // Count the period from when the request really went out: after a rate-limit wait the schedule moves with it
      // instead of bunching the next poll up against the limit again (which would delay one poll every second).
      const anchorMs = Math.max(startedMs, this.imds.lastRequestStartedMs ?? startedMs);
      await clock.sleep(Math.max(0, anchorMs + waitMs - clock.now()), signal).catch(() => undefined);
    }
  }

  /** One poll; returns how long after its start the next poll should begin. */
  async pollOnce(): Promise<number> {
    const { config, clock, logger, agentVersion } = this.deps;
    const startedMs = clock.now();
    try {
      const fetched = await this.imds.getScheduledEvents(this.stopController.signal);
      const nowMs = clock.now();
      const result = applyDocument(this.state, fetched.document, {
        nowMs,
        vm: this.vmIdentity,
        agentVersion,
        gapThresholdMs: config.gapThresholdMs ?? Math.max(5 * config.pollIntervalMs, 10_000),
        emittedRetentionMs: config.emittedRetentionMs,
      });
      // An unchanged document changes nothing worth a disk write: keep the hot path free of fsyncs.
      const entries = result.changed ? this.commit(result.state, [...result.records, ...result.malformed], nowMs) : [];
      for (const m of result.malformed) {
        this.metrics.malformedEvents.inc({ reason: m.Outcome });
        logger.warn({ eventId: m.EventId, reason: m.Outcome, detail: m.Detail }, "IMDS listed an event that cannot be read; forwarded as a MalformedEvent record");
      }
      this.state = result.state;
      this.recordPoll(result.changed ? "ok" : "unchanged", startedMs, nowMs);
      if (nowMs - startedMs > Math.max(2000, 2 * config.pollIntervalMs)) {
        logger.warn({ latencyMs: nowMs - startedMs }, "IMDS answered slowly (its first call after enabling may take up to 2 minutes)");
      }
      if (this.stats.consecutiveFailures > 0) logger.info({ afterFailures: this.stats.consecutiveFailures }, "IMDS polls recovered");
      this.stats.consecutiveFailures = 0;
      this.stats.lastError = null;
      this.metrics.incarnation.set(fetched.document.DocumentIncarnation);
      for (const status of ["Scheduled", "Started"] as const) {
        this.metrics.eventsByStatus.set({ status }, [...this.state.events.values()].filter((e) => e.status === status).length);
      }
      if (entries.length > 0) logger.info({ records: entries.map((e) => `${(e.record as { EventId?: string }).EventId}:${(e.record as { EventStatus?: string }).EventStatus}`) }, "transitions recorded");
      this.afterCommit(entries);
      return config.pollIntervalMs;
    } catch (err) {
      if (this.stopController.signal.aborted) return 0;
      if (!(err instanceof ImdsRequestError)) {
        // A store failure: nothing was committed, state stays as it was; the next poll tries again.
        this.metrics.storeErrors.inc();
        logger.error({ err }, "could not commit a document to the store; will retry");
        return config.pollIntervalMs;
      }
      return this.onPollFailure(err, startedMs);
    }
  }

  private commit(state: CollectorState, records: readonly SefRecord[], nowMs: number): OutboxEntry[] {
    const entries = this.store.commitDocument(state, records, nowMs);
    for (const e of entries) this.metrics.recordsWritten.inc({ type: e.record.RecordType });
    return entries;
  }

  /** After an append: wake the sinks, tell the listeners, and keep the outbox within its cap (nothing to do otherwise). */
  private afterCommit(entries: readonly OutboxEntry[]): void {
    if (entries.length === 0) return;
    const urgent = entries.some((e) => isUrgent(e.record));
    for (const drainer of this.drainers) drainer.notify(urgent);
    const transitions = entries.flatMap((e) => (e.record.RecordType === "Transition" ? [e.record] : []));
    if (transitions.length > 0) for (const listener of this.transitionListeners) listener(transitions);
    this.store.prune();
    const evicted = this.store.evictOverCap();
    if (evicted.length > 0) {
      this.metrics.storeDroppedRecords.inc(evicted.length);
      this.deps.logger.error(
        { records: evicted.length, capBytes: this.deps.config.maxOutboxBytes, file: this.deadLetters.pathFor("store-overflow") },
        "outbox over its size cap: oldest records moved to the dead-letter file",
      );
      void this.deadLetters
        .write("store-overflow", evicted.map((e) => ({ entry: e, reason: "outbox over its size cap before every sink took it" })), this.deps.clock.now())
        .catch((err: unknown) => this.deps.logger.error({ err }, "could not write evicted records to the dead-letter file"));
    }
  }

  private onPollFailure(err: ImdsRequestError, startedMs: number): number {
    const { config, clock, logger } = this.deps;
    this.state = applyPollFailure(this.state);
    this.stats.failed += 1;
    this.stats.consecutiveFailures += 1;
    this.stats.lastError = err.message;
    this.recordPoll(outcomeOf(err), startedMs, clock.now());
    const waitMs = pollBackoffMs(err.kind, this.stats.consecutiveFailures, config.pollIntervalMs, err.retryAfterMs);
    const fields = { kind: err.kind, status: err.status, consecutiveFailures: this.stats.consecutiveFailures, retryInMs: waitMs, err: err.message };
    if (err.kind === "bad_request") {
      logger.error(fields, "IMDS rejected the request as malformed (400): check imdsUrl and apiVersion; retrying slowly");
    } else if (this.stats.consecutiveFailures === 1 || this.stats.consecutiveFailures % 10 === 0) {
      logger.warn(fields, "IMDS poll failed; no transitions inferred from a failed poll");
    }
    return waitMs;
  }

  private recordPoll(outcome: PollOutcome, startedMs: number, endedMs: number): void {
    this.metrics.polls.inc({ outcome });
    this.metrics.pollLatency.observe((endedMs - startedMs) / 1000);
    if (outcome === "ok" || outcome === "unchanged") {
      this.stats.ok += 1;
      this.stats.lastGoodPollMs = endedMs;
      this.metrics.lastGoodPollTimestamp.set(endedMs / 1000);
    }
  }

  private async refreshIdentity(atStart: boolean): Promise<void> {
    const { clock, logger } = this.deps;
    if (this.computeInFlight) return;
    this.computeInFlight = true;
    this.lastComputeMs = clock.now();
    const fetch = this.imds.getCompute(this.stopController.signal).then(
      (vm) => {
        this.computeInFlight = false;
        this.computeFailures = 0;
        if (JSON.stringify(vm) !== JSON.stringify(this.vm)) {
          logger.info({ vmName: vm.VmName, vmId: vm.VmId }, "VM identity from instance metadata");
          this.vm = vm;
          this.store.saveVmIdentity(vm);
        }
      },
      (err: unknown) => {
        this.computeInFlight = false;
        this.computeFailures += 1;
        if (!this.stopController.signal.aborted && (this.computeFailures === 1 || this.computeFailures % 10 === 0)) {
          logger.warn({ err, failures: this.computeFailures }, "instance metadata unavailable; records keep the last known VM identity; retrying");
        }
      },
    );
    // At start, give compute a few seconds so the first records carry the identity, but never hold polling longer.
    if (atStart) await Promise.race([fetch, clock.sleep(5000, this.stopController.signal).catch(() => undefined)]);
  }
}

function outcomeOf(err: ImdsRequestError): PollOutcome {
  switch (err.kind) {
    case "bad_request":
      return "bad_request";
    case "throttled":
      return "throttled";
    case "timeout":
      return "timeout";
    case "network_error":
      return "network_error";
    case "malformed":
    case "too_large":
      return "malformed";
    default:
      return "http_error";
  }
}
