// Log Analytics sink: posts records to a data collection rule's stream through the Logs Ingestion API
// (@azure/monitor-ingestion) in size-bounded requests, and turns each answer into per-record outcomes for the drainer.
import type { Agent as HttpsAgent } from "node:https";
import type { LogsIngestionClient } from "@azure/monitor-ingestion";
import type { Logger } from "pino";
import type { AgentMetrics } from "../../observability/metrics.js";
import { validateRow } from "@sef/contract/stream-schema.js";
import { systemClock, type Clock } from "@sef/runtime/clock.js";
import { allOutcomes, delivered, rejected, retry, type RetryOutcome, type SendOutcomes, type Sink } from "../sink.js";
import type { OutboxEntry } from "../../delivery/outbox-entry.js";
import { createLogsIngestionClient, type TokenCredential } from "./client.js";
import { classifyUploadError, oldestUndeliveredAgeWarning, type UploadFailure } from "./classify.js";
import { PreEncodedBodies } from "./pre-encoded-body.js";
import { jsonArrayOf, planRequests, rowFitsRequest } from "./encode.js";
import { processRulePauses, type RulePauses } from "./rule-pauses.js";
import type { LogAnalyticsSettings } from "./settings.js";
import type { SinkRetrySettings } from "../delivery-settings.js";

export { createCredential, type TokenCredential } from "./client.js";

export interface LogAnalyticsSinkOptions {
  readonly settings: LogAnalyticsSettings;
  readonly logger: Logger;
  /** Overrides the credential the settings choose (tests with local tokens). */
  readonly credential?: TokenCredential;
  readonly clock?: Clock;
  /** Throttling pauses shared by sinks posting to the same rule; the process-wide book by default. */
  readonly pauses?: RulePauses;
  /** Counts stale-record warnings (`sef_time_generated_age_warnings_total`). */
  readonly metrics?: AgentMetrics;
}

/** Counters the metrics module can read; they only grow, except the `last…` gauges. */
export interface LogAnalyticsSinkStats {
  requests: number;
  /** Bytes of JSON sent, before compression. */
  requestBytes: number;
  recordsAccepted: number;
  recordsRejected: number;
  throttledResponses: number;
  /** Sends whose oldest record was older than the stale-warning threshold. */
  staleBatches: number;
  /** Age of the oldest record of the last send, in milliseconds (0 before the first send). */
  lastOldestRecordAgeMs: number;
}

type Settlement = { readonly rejected?: string };

interface PendingRow {
  readonly index: number;
  /** The record's JSON as stored in the outbox: the request body is built from it, never re-encoded. */
  readonly json: string;
  readonly bytes: number;
}

export class LogAnalyticsSink implements Sink {
  readonly name = "loganalytics";
  private readonly metrics: AgentMetrics | undefined;
  readonly maxBatchRecords: number;
  readonly lingerMs: number;
  readonly maxConcurrentSends: number;
  readonly retryPolicy: SinkRetrySettings | undefined;
  readonly stats: LogAnalyticsSinkStats = {
    requests: 0,
    requestBytes: 0,
    recordsAccepted: 0,
    recordsRejected: 0,
    throttledResponses: 0,
    staleBatches: 0,
    lastOldestRecordAgeMs: 0,
  };

  private readonly settings: LogAnalyticsSettings;
  private readonly logger: Logger;
  private readonly clock: Clock;
  private readonly pauses: RulePauses;
  private readonly client: LogsIngestionClient;
  private readonly agent: HttpsAgent | undefined;
  private readonly bodies = new PreEncodedBodies();

  constructor(options: LogAnalyticsSinkOptions) {
    this.settings = options.settings;
    this.logger = options.logger.child({ sink: "loganalytics" });
    this.clock = options.clock ?? systemClock;
    this.pauses = options.pauses ?? processRulePauses;
    this.metrics = options.metrics;
    this.maxBatchRecords = this.settings.maxBatchRecords;
    this.lingerMs = this.settings.lingerMs;
    this.retryPolicy = this.settings.retry;
    // Log Analytics keeps no order between requests (TimeGenerated orders the rows), so full batches may overlap.
    this.maxConcurrentSends = this.settings.maxConcurrentSends;
    ({ client: this.client, agent: this.agent } = createLogsIngestionClient(
      this.settings,
      options.credential,
      this.bodies,
    ));
  }

  async send(batch: readonly OutboxEntry[], signal: AbortSignal): Promise<SendOutcomes> {
    const ruleId = this.settings.ruleId;
    const pausedMs = this.pauses.remainingMs(ruleId, this.clock.monotonicMs());
    if (pausedMs > 0) return allOutcomes(batch, retry(`rule ${ruleId} is throttled`, pausedMs));

    const settled: (Settlement | undefined)[] = batch.map(() => undefined);
    const pending: PendingRow[] = [];
    let oldestTimeGenerated: string | undefined;
    batch.forEach((entry, index) => {
      const problems = validateRow(entry.record);
      if (problems.length > 0) {
        settled[index] = {
          rejected: `record does not match stream ${this.settings.streamName}: ${problems.join("; ")}`,
        };
        return;
      }
      const bytes = Buffer.byteLength(entry.json);
      if (!rowFitsRequest(bytes, this.settings.maxRequestBytes)) {
        settled[index] = {
          rejected: `record is ${bytes} bytes of JSON, more than one request may carry (${this.settings.maxRequestBytes})`,
        };
        return;
      }
      const generated = entry.record.TimeGenerated;
      if (oldestTimeGenerated === undefined || Date.parse(generated) < Date.parse(oldestTimeGenerated))
        oldestTimeGenerated = generated;
      pending.push({ index, json: entry.json, bytes });
    });
    this.warnIfStale(oldestTimeGenerated);

    const failure = await this.sendRequests(planRequests(pending, this.settings.maxRequestBytes), settled, signal);
    const notSent = failure ?? retry("not sent (internal: no outcome)");
    const outcomes = settled.map((s) =>
      s === undefined ? notSent : s.rejected !== undefined ? rejected(s.rejected) : delivered,
    );
    for (const o of outcomes) {
      if (o.kind === "delivered") this.stats.recordsAccepted += 1;
      else if (o.kind === "rejected") this.stats.recordsRejected += 1;
    }
    return outcomes;
  }

  /** Sends the planned requests (a few at a time); fills `settled`; returns the first retryable failure, if any. */
  private async sendRequests(
    requests: PendingRow[][],
    settled: (Settlement | undefined)[],
    signal: AbortSignal,
  ): Promise<RetryOutcome | undefined> {
    let failure: RetryOutcome | undefined;
    let next = 0;
    const worker = async (): Promise<void> => {
      while (!failure && next < requests.length) {
        const request = requests[next++]!;
        const pausedMs = this.pauses.remainingMs(this.settings.ruleId, this.clock.monotonicMs());
        if (pausedMs > 0) {
          failure ??= retry(`rule ${this.settings.ruleId} is throttled`, pausedMs);
          return;
        }
        const outcome = await this.upload(request, signal);
        if (outcome.kind === "retry") {
          failure ??= outcome;
          return;
        }
        for (const row of request) settled[row.index] = outcome.kind === "rejected" ? { rejected: outcome.reason } : {};
      }
    };
    const workers = Math.min(this.settings.maxConcurrentRequests, requests.length);
    await Promise.all(Array.from({ length: workers }, worker));
    return failure;
  }

  /**
   * One request: its rows were all accepted, all rejected, or it should be retried. The body is the rows' stored JSON
   * joined into an array (encoded once, when the record entered the outbox): the SDK gets one placeholder row, which
   * the pre-encoded-body policy swaps for that body before the SDK gzips and sends it (see pre-encoded-body.ts).
   */
  private async upload(request: PendingRow[], signal: AbortSignal): Promise<{ kind: "accepted" } | UploadFailure> {
    const rows = request.length;
    const body = jsonArrayOf(request.map((r) => r.json));
    this.stats.requests += 1;
    this.stats.requestBytes += request.reduce((sum, r) => sum + r.bytes, request.length + 1);
    try {
      await this.bodies.upload(body, (placeholder) =>
        this.client.upload(this.settings.ruleId, this.settings.streamName, [placeholder], {
          maxConcurrency: 1,
          abortSignal: AbortSignal.any([signal, AbortSignal.timeout(this.settings.requestTimeoutMs)]),
        }),
      );
      return { kind: "accepted" };
    } catch (err) {
      const failure = classifyUploadError(err, this.clock.now());
      if (failure.kind === "retry" && (failure.statusCode === 429 || failure.statusCode === 503)) {
        this.stats.throttledResponses += 1;
        if (failure.afterMs !== undefined)
          this.pauses.pauseUntil(this.settings.ruleId, this.clock.monotonicMs() + failure.afterMs);
      }
      const log =
        failure.kind === "rejected" ? this.logger.error.bind(this.logger) : this.logger.warn.bind(this.logger);
      log(
        {
          rows,
          statusCode: failure.statusCode,
          retryAfterMs: failure.kind === "retry" ? failure.afterMs : undefined,
        },
        `logs ingestion request failed: ${failure.reason}`,
      );
      return failure;
    }
  }

  private warnIfStale(oldestTimeGenerated: string | undefined): void {
    const nowMs = this.clock.now();
    this.stats.lastOldestRecordAgeMs =
      oldestTimeGenerated === undefined ? 0 : Math.max(0, nowMs - Date.parse(oldestTimeGenerated));
    const warning = oldestUndeliveredAgeWarning(
      nowMs,
      oldestTimeGenerated,
      this.settings.staleWarningHours * 3_600_000,
    );
    if (warning) {
      this.stats.staleBatches += 1;
      this.metrics?.timeGeneratedAgeWarnings.inc({ sink: this.name });
      this.logger.warn({ oldestRecordAgeMs: warning.ageMs, oldestTimeGenerated }, warning.message);
    }
  }

  async close(): Promise<void> {
    this.agent?.destroy();
  }
}
