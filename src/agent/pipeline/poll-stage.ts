// Poll stage: owns the IMDS client, the poll schedule and its backoff (the IMDS requests' only retry owner: the client
// sends each request once), poll statistics, and the VM identity (instance metadata, refreshed now and then). Each fetched document goes to `ingest` (the collect stage); what that throws is a
// store failure (nothing committed; the next poll tries again).
import type { Logger } from "pino";
import type { AgentConfig } from "../config/schema.js";
import type { Clock } from "@sef/runtime/clock.js";
import type { VmIdentity } from "@sef/contract/record.js";
import type { ScheduledEventsDocument } from "../imds/document.js";
import { ImdsClient, imdsDefaults, type ImdsEndpointSource } from "../imds/client.js";
import { ImdsRequestError } from "../imds/errors.js";
import { pollOutcomes, type AgentMetrics, type PollOutcome } from "../observability/metrics.js";
import { retryDelayMs } from "@sef/retry/policy.js";
import { identityRetryPolicy, pollBackoffMs } from "./poll-backoff.js";

/** Wall and monotonic time disagreeing by more than this between two polls is reported as a clock step. */
export const clockStepThresholdMs = 2000;
/** How long closing the IMDS client may wait for a request in flight at shutdown. */
const imdsCloseTimeoutMs = 500;

export interface PollStats {
  ok: number;
  failed: number;
  consecutiveFailures: number;
  /** Monotonic time of the last good poll. */
  lastGoodPollMs: number | null;
  lastError: string | null;
}

export interface PollStageOptions {
  config: AgentConfig;
  clock: Clock;
  logger: Logger;
  metrics: AgentMetrics;
  /** The discovered IMDS endpoint (imds/discovery); without it the client uses `imdsUrl` or the link-local default. */
  imdsEndpoint?: ImdsEndpointSource;
  /** The identity the store remembered from the last run. */
  initialVm: VmIdentity;
  /** A new VM identity was read (persist it). */
  onIdentity(vm: VmIdentity): void;
  /** The agent could not see IMDS for a moment (a failed poll). */
  onBlind(): void;
  /**
   * A document arrived at wall time `nowMs`; `clockStepMs` is the wall-clock step noticed since the last good poll
   * (0 when none). Returns whether it changed anything. Throws when it cannot be committed.
   */
  ingest(document: ScheduledEventsDocument, nowMs: number, clockStepMs: number): boolean;
  /** Picks the backoff's jitter, in [0, 1) (default Math.random). */
  random?: () => number;
}

export class PollStage {
  readonly imds: ImdsClient;
  readonly stats: PollStats = { ok: 0, failed: 0, consecutiveFailures: 0, lastGoodPollMs: null, lastError: null };
  /** Polls by outcome and the wall time of the last good one: plain numbers, read by the metrics when scraped. */
  readonly outcomes = Object.fromEntries(pollOutcomes.map((o) => [o, 0])) as Record<PollOutcome, number>;
  lastGoodPollWallMs: number | null = null;
  /** DocumentIncarnation of the last document processed. */
  lastIncarnation: number | null = null;
  private vm: VmIdentity;
  private lastComputeMs = Number.NEGATIVE_INFINITY;
  private lastClockReading: { wallMs: number; monotonicMs: number } | undefined;
  /**
   * Failed instance-metadata reads in a row, and the wait before the next while the identity is unknown (set by each
   * read's outcome: the loop reads again only once no read is in flight).
   */
  private computeFailures = 0;
  private computeRetryMs = 0;
  private computeInFlight = false;
  private loop: Promise<void> | undefined;

  constructor(
    private readonly options: PollStageOptions,
    private readonly signal: AbortSignal,
  ) {
    const { config, clock } = options;
    this.vm = options.initialVm;
    this.imds = new ImdsClient({
      imdsUrl: config.imdsUrl ?? imdsDefaults.imdsUrl,
      endpoint: options.imdsEndpoint,
      apiVersion: config.apiVersion,
      firstCallTimeoutMs: config.imdsFirstCallTimeoutMs,
      requestTimeoutMs: config.imdsRequestTimeoutMs,
      maxBodyBytes: config.imdsMaxBodyBytes,
      clock,
      extraHeaders: config.imdsExtraHeaders,
    });
  }

  get vmIdentity(): VmIdentity {
    return this.vm;
  }

  /** Reads the VM identity before anything emits records (bounded: never holds start-up more than a few seconds). */
  async prepare(): Promise<void> {
    // Gives instance metadata a few seconds so the first records carry the identity, but never holds polling longer.
    const waited = this.options.clock.sleep(5000, this.signal).catch(() => undefined);
    await Promise.race([this.refreshIdentity(), waited]);
  }

  start(): void {
    this.loop = this.run().catch((err: unknown) => {
      this.options.logger.fatal({ err }, "poll loop failed");
      throw err;
    });
  }

  /** Resolves once the loop has ended (after the stop signal). */
  async stopped(): Promise<void> {
    await this.loop?.catch(() => undefined);
  }

  async close(): Promise<void> {
    await this.imds.close(imdsCloseTimeoutMs).catch(() => undefined);
  }

  private async run(): Promise<void> {
    const { config, clock } = this.options;
    while (!this.signal.aborted) {
      const startedMs = clock.monotonicMs();
      if (startedMs - this.lastComputeMs >= (this.vm.VmId === "" ? this.computeRetryMs : config.computeRefreshMs))
        void this.refreshIdentity();
      const waitMs = await this.pollOnce();
      // Count the period from when the request really went out: after a rate-limit wait the schedule moves with it
      // instead of bunching the next poll up against the limit again (which would delay one poll every second).
      const anchorMs = Math.max(startedMs, this.imds.lastRequestStartedMs ?? startedMs);
      await clock.sleep(Math.max(0, anchorMs + waitMs - clock.monotonicMs()), this.signal).catch(() => undefined);
    }
  }

  /** One poll; returns how long after its start the next poll should begin. */
  async pollOnce(): Promise<number> {
    const { config, clock, logger, metrics } = this.options;
    const startedMs = clock.monotonicMs();
    try {
      const fetched = await this.imds.getScheduledEvents(this.signal);
      // Wall time stamps the records; the monotonic time measures the poll.
      const nowMs = clock.now();
      const endedMs = clock.monotonicMs();
      const stepMs = this.noticeClockStep(nowMs, endedMs);
      const changed = this.options.ingest(fetched.document, nowMs, stepMs);
      this.recordPoll(changed ? "ok" : "unchanged", startedMs, endedMs);
      if (endedMs - startedMs > Math.max(2000, 2 * config.pollIntervalMs)) {
        logger.warn(
          { latencyMs: Math.round(endedMs - startedMs) },
          "IMDS answered slowly (its first call after enabling may take up to 2 minutes)",
        );
      }
      if (this.stats.consecutiveFailures > 0)
        logger.info({ afterFailures: this.stats.consecutiveFailures }, "IMDS polls recovered");
      this.stats.consecutiveFailures = 0;
      this.stats.lastError = null;
      this.lastIncarnation = fetched.document.DocumentIncarnation;
      return config.pollIntervalMs;
    } catch (err) {
      if (this.signal.aborted) return 0;
      if (!(err instanceof ImdsRequestError)) {
        // A store failure: nothing was committed, state stays as it was; the next poll tries again.
        metrics.storeErrors.inc();
        logger.error({ err }, "could not commit a document to the store; will retry");
        return config.pollIntervalMs;
      }
      return this.onPollFailure(err, startedMs);
    }
  }

  private onPollFailure(err: ImdsRequestError, startedMs: number): number {
    const { config, clock, logger } = this.options;
    this.options.onBlind();
    this.stats.failed += 1;
    this.stats.consecutiveFailures += 1;
    this.stats.lastError = err.message;
    this.recordPoll(outcomeOf(err), startedMs, clock.monotonicMs());
    const waitMs = pollBackoffMs(
      err.kind,
      this.stats.consecutiveFailures,
      config.pollIntervalMs,
      err.retryAfterMs,
      (this.options.random ?? Math.random)(),
    );
    const fields = {
      kind: err.kind,
      status: err.status,
      consecutiveFailures: this.stats.consecutiveFailures,
      retryInMs: waitMs,
      err: err.message,
    };
    if (err.kind === "bad_request") {
      logger.error(
        fields,
        "IMDS rejected the request as malformed (400): check imdsUrl and apiVersion; retrying slowly",
      );
    } else if (this.stats.consecutiveFailures === 1 || this.stats.consecutiveFailures % 10 === 0) {
      logger.warn(fields, "IMDS poll failed; no transitions inferred from a failed poll");
    }
    return waitMs;
  }

  private recordPoll(outcome: PollOutcome, startedMs: number, endedMs: number): void {
    this.outcomes[outcome] += 1;
    this.options.metrics.observePollSeconds((endedMs - startedMs) / 1000);
    if (outcome === "ok" || outcome === "unchanged") {
      this.stats.ok += 1;
      this.stats.lastGoodPollMs = endedMs;
      this.lastGoodPollWallMs = this.options.clock.now();
    }
  }

  /**
   * Compares how far the wall clock and the monotonic clock moved since the last good poll: a disagreement beyond
   * `clockStepThresholdMs` is a wall-clock step (NTP, an operator, a restored VM), logged and counted. Nothing is
   * scheduled on the wall clock, so a step changes only the timestamps of later records.
   */
  private noticeClockStep(wallMs: number, monotonicMs: number): number {
    const last = this.lastClockReading;
    this.lastClockReading = { wallMs, monotonicMs };
    if (!last) return 0;
    const stepMs = wallMs - last.wallMs - (monotonicMs - last.monotonicMs);
    const direction = stepMs >= clockStepThresholdMs ? "forward" : stepMs <= -clockStepThresholdMs ? "back" : undefined;
    if (direction === undefined) return 0;
    this.options.metrics.clockSteps.inc({ direction });
    this.options.logger.warn(
      { stepMs: Math.round(stepMs), direction, wallTime: new Date(wallMs).toISOString() },
      `wall clock stepped ${direction} by ${Math.round(Math.abs(stepMs) / 1000)} s; polling, backoff and deadlines use the monotonic clock and are unaffected`,
    );
    return stepMs;
  }

  /** Reads the VM identity unless a read is in flight; resolves when the read has ended. */
  private async refreshIdentity(): Promise<void> {
    const { clock, logger } = this.options;
    if (this.computeInFlight) return;
    this.computeInFlight = true;
    this.lastComputeMs = clock.monotonicMs();
    await this.imds.getCompute(this.signal).then(
      (vm) => {
        this.computeInFlight = false;
        this.computeFailures = 0;
        this.computeRetryMs = identityRetryPolicy.initialDelayMs / 2;
        if (JSON.stringify(vm) !== JSON.stringify(this.vm)) {
          logger.info({ vmName: vm.VmName, vmId: vm.VmId }, "VM identity from instance metadata");
          this.vm = vm;
          this.options.onIdentity(vm);
        }
      },
      (err: unknown) => {
        this.computeInFlight = false;
        this.computeFailures += 1;
        this.computeRetryMs = retryDelayMs(
          identityRetryPolicy,
          this.computeFailures,
          undefined,
          (this.options.random ?? Math.random)(),
        );
        if (!this.signal.aborted && (this.computeFailures === 1 || this.computeFailures % 10 === 0)) {
          logger.warn(
            { err, failures: this.computeFailures },
            "instance metadata unavailable; records keep the last known VM identity; retrying",
          );
        }
      },
    );
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
    case "no_endpoint":
      return "network_error";
    case "malformed":
    case "too_large":
      return "malformed";
    default:
      return "http_error";
  }
}
