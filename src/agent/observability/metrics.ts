// Agent metrics (prom-client): one registry per agent, named gauges/counters the poller, store and drain loops update.
// Every documented series exists (at 0) from the start, so a rate() or an alert never waits for a first occurrence.
// What changes with every poll is read when scraped (`readPollsFrom`), not written a second at a time.
import { Registry, Counter, Gauge, Histogram } from "./prom-client.js";
import { registerProcessMetrics } from "./process-metrics.js";
import { recordTypes } from "@sef/contract/record.js";
import { malformedEventReasons } from "@sef/contract/record.js";

export const pollOutcomes = [
  "ok",
  "unchanged",
  "http_error",
  "bad_request",
  "throttled",
  "timeout",
  "network_error",
  "malformed",
] as const;
export type PollOutcome = (typeof pollOutcomes)[number];
/** Label values of sef_approvals_total and sef_hooks_total, as the actions module writes them. */
export const approvalOutcomes = ["approved", "failed", "dry_run", "interrupted"] as const;
export const hookOutcomes = ["succeeded", "failed", "timed_out", "interrupted"] as const;

/** What the scrape reads from the poll and collect stages (counts kept as plain numbers between scrapes). */
export interface PollMetricsSource {
  readonly outcomes: Readonly<Record<PollOutcome, number>>;
  /** Wall time (ms) of the last good poll, or null before the first. */
  lastGoodPollWallMs(): number | null;
  /** DocumentIncarnation of the last processed document, or null before the first. */
  incarnation(): number | null;
  eventsWithStatus(status: "Scheduled" | "Started"): number;
  /** Conditional polls: 304 answers and unchanged bodies. */
  conditional(): { readonly notModified: number; readonly unchangedBodies: number };
}

export interface AgentMetricsOptions {
  /** Also expose the process's own metrics (prom-client defaults: CPU, RSS, heap, event-loop lag, open fds). */
  processMetrics?: boolean;
}

export class AgentMetrics {
  readonly registry = new Registry();

  constructor(options: AgentMetricsOptions = {}) {
    for (const outcome of pollOutcomes) this.polls.inc({ outcome }, 0);
    for (const type of recordTypes) this.recordsWritten.inc({ type }, 0);
    for (const reason of malformedEventReasons) this.malformedEvents.inc({ reason }, 0);
    for (const status of ["Scheduled", "Started"]) this.eventsByStatus.set({ status }, 0);
    for (const outcome of approvalOutcomes) this.approvals.inc({ outcome }, 0);
    for (const outcome of hookOutcomes) this.hooks.inc({ outcome }, 0);
    for (const direction of ["back", "forward"]) this.clockSteps.inc({ direction }, 0);
    this.lastGoodPollAge.set(-1);
    this.incarnation.set(0);
    // Without prom-client's event-loop histogram: its libuv timer would wake an idle agent 10 times a second.
    if (options.processMetrics) registerProcessMetrics(this.registry);
  }

  private source: PollMetricsSource | undefined;

  /** Records one poll's latency; it reaches `sef_poll_duration_seconds` at the next scrape (or after 256 polls). */
  observePollSeconds(seconds: number): void {
    if (this.pendingPollSeconds.push(seconds) >= 256) this.flushPollLatencies();
  }

  private flushPollLatencies(): void {
    for (const seconds of this.pendingPollSeconds) this.pollLatency.observe(seconds);
    this.pendingPollSeconds.length = 0;
  }

  /** From now on the poll series are read from `source` at each scrape. */
  readPollsFrom(source: PollMetricsSource): void {
    this.source = source;
  }

  /** Creates the per-sink series at 0 (call once the sinks are known). */
  initSinks(names: readonly string[]): void {
    for (const sink of names) {
      this.outboxDepth.set({ sink }, 0);
      this.outboxOldestAge.set({ sink }, 0);
      this.sent.inc({ sink }, 0);
      this.retries.inc({ sink }, 0);
      this.deadLetters.inc({ sink }, 0);
      this.throttledSeconds.inc({ sink }, 0);
      this.timeGeneratedAgeWarnings.inc({ sink }, 0);
      this.sinkFailing.set({ sink }, 0);
      for (const reason of ["over_cap", "over_cap_dead_lettered"]) this.outboxEvicted.inc({ sink, reason }, 0);
    }
  }

  readonly polls: Counter<"outcome"> = new Counter({
    name: "sef_polls_total",
    help: "IMDS scheduled-events polls by outcome",
    labelNames: ["outcome"] as const,
    registers: [this.registry],
    collect: () => {
      const outcomes = this.source?.outcomes;
      if (outcomes) for (const outcome of pollOutcomes) setCounter(this.polls, { outcome }, outcomes[outcome]);
    },
  });
  readonly notModified: Counter = new Counter({
    name: "sef_imds_not_modified_total",
    help: "Scheduled-events polls IMDS answered 304 Not Modified (If-None-Match matched the last ETag)",
    registers: [this.registry],
    collect: () => {
      if (this.source) setCounter(this.notModified, {}, this.source.conditional().notModified);
    },
  });
  readonly unchangedBodies: Counter = new Counter({
    name: "sef_imds_unchanged_bodies_total",
    help: "Scheduled-events polls answered 200 with the same body as the last one (not parsed again)",
    registers: [this.registry],
    collect: () => {
      if (this.source) setCounter(this.unchangedBodies, {}, this.source.conditional().unchangedBodies);
    },
  });
  /** Poll latencies not yet in the histogram: a poll a second appends a number, the scrape (or a full list) observes them. */
  private readonly pendingPollSeconds: number[] = [];
  readonly pollLatency: Histogram = new Histogram({
    name: "sef_poll_duration_seconds",
    help: "Latency of IMDS scheduled-events polls",
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 60, 120],
    registers: [this.registry],
    collect: () => this.flushPollLatencies(),
  });
  readonly lastGoodPollTimestamp: Gauge = new Gauge({
    name: "sef_last_good_poll_timestamp_seconds",
    help: "Unix time of the last successful poll",
    registers: [this.registry],
    collect: () => {
      const wallMs = this.source?.lastGoodPollWallMs();
      if (wallMs !== undefined && wallMs !== null) this.lastGoodPollTimestamp.set(wallMs / 1000);
    },
  });
  readonly lastGoodPollAge = new Gauge({
    name: "sef_last_good_poll_age_seconds",
    help: "Seconds since the last successful poll (-1 before the first)",
    registers: [this.registry],
  });
  readonly malformedEvents = new Counter({
    name: "sef_imds_events_malformed_total",
    help: "Events IMDS listed that could not be read (each distinct one counted once), by reason",
    labelNames: ["reason"] as const,
    registers: [this.registry],
  });
  readonly incarnation: Gauge = new Gauge({
    name: "sef_document_incarnation",
    help: "DocumentIncarnation of the last processed document",
    registers: [this.registry],
    collect: () => {
      const incarnation = this.source?.incarnation();
      if (incarnation !== undefined && incarnation !== null) this.incarnation.set(incarnation);
    },
  });
  readonly eventsByStatus: Gauge<"status"> = new Gauge({
    name: "sef_events",
    help: "Events currently known, by status",
    labelNames: ["status"] as const,
    registers: [this.registry],
    collect: () => {
      if (this.source)
        for (const status of ["Scheduled", "Started"] as const)
          this.eventsByStatus.set({ status }, this.source.eventsWithStatus(status));
    },
  });
  readonly recordsWritten = new Counter({
    name: "sef_records_total",
    help: "Records appended to the outbox, by type",
    labelNames: ["type"] as const,
    registers: [this.registry],
  });
  readonly outboxDepth = new Gauge({
    name: "sef_outbox_depth",
    help: "Records not yet delivered, per sink",
    labelNames: ["sink"] as const,
    registers: [this.registry],
  });
  readonly outboxOldestAge = new Gauge({
    name: "sef_outbox_oldest_age_seconds",
    help: "Age of the oldest undelivered record, per sink (0 when empty)",
    labelNames: ["sink"] as const,
    registers: [this.registry],
  });
  readonly outboxParked = new Gauge({
    name: "sef_outbox_parked_records",
    help: "Records held for sinks no longer configured (parked until a sink of that name returns or `sef outbox drop-sink` gives it up); per sink: sef outbox status",
    registers: [this.registry],
  });
  readonly outboxParkedSinks = new Gauge({
    name: "sef_outbox_parked_sinks",
    help: "Sinks no longer configured whose records are kept (parked)",
    registers: [this.registry],
  });
  readonly sent = new Counter({
    name: "sef_sink_sent_total",
    help: "Records delivered, per sink",
    labelNames: ["sink"] as const,
    registers: [this.registry],
  });
  readonly retries = new Counter({
    name: "sef_sink_retries_total",
    help: "Send attempts that will be retried, per sink",
    labelNames: ["sink"] as const,
    registers: [this.registry],
  });
  readonly deadLetters = new Counter({
    name: "sef_sink_dead_letters_total",
    help: "Records dead-lettered, per sink",
    labelNames: ["sink"] as const,
    registers: [this.registry],
  });
  readonly throttledSeconds = new Counter({
    name: "sef_sink_throttled_seconds_total",
    help: "Time spent waiting on a server's retry-after hint, per sink",
    labelNames: ["sink"] as const,
    registers: [this.registry],
  });
  readonly storeErrors = new Counter({
    name: "sef_store_errors_total",
    help: "Failed store writes",
    registers: [this.registry],
  });
  readonly outboxEvicted = new Counter({
    name: "sef_outbox_evicted_records_total",
    help: "Records evicted from the outbox over maxOutboxBytes, by sink and reason (over_cap: pending for the sink; over_cap_dead_lettered: already dead-lettered)",
    labelNames: ["sink", "reason"] as const,
    registers: [this.registry],
  });
  readonly storeDroppedRecords = new Counter({
    name: "sef_store_dropped_records_total",
    help: "Records removed from the outbox by the size cap before every sink had them",
    registers: [this.registry],
  });
  readonly approvals = new Counter({
    name: "sef_approvals_total",
    help: "Approval attempts by outcome",
    labelNames: ["outcome"] as const,
    registers: [this.registry],
  });
  readonly hooks = new Counter({
    name: "sef_hooks_total",
    help: "Hook runs by outcome",
    labelNames: ["outcome"] as const,
    registers: [this.registry],
  });
  readonly timeGeneratedAgeWarnings = new Counter({
    name: "sef_time_generated_age_warnings_total",
    help: "Times the oldest undelivered record neared the 2-day TimeGenerated limit of Log Analytics",
    labelNames: ["sink"] as const,
    registers: [this.registry],
  });

  readonly sinkFailing = new Gauge({
    name: "sef_sink_failing",
    help: "1 while a sink's sends fail (it is retrying), else 0",
    labelNames: ["sink"] as const,
    registers: [this.registry],
  });
  readonly clockSteps = new Counter({
    name: "sef_clock_steps_total",
    help: "Wall-clock steps detected between polls (wall and monotonic time disagreed), by direction",
    labelNames: ["direction"] as const,
    registers: [this.registry],
  });

  /** Sets the parked gauges from the parked sinks' pending counts (both 0 when no sink is parked: series from the start). */
  setParked(parked: ReadonlyArray<{ sink: string; pending: number }>): void {
    this.outboxParked.set(parked.reduce((sum, p) => sum + p.pending, 0));
    this.outboxParkedSinks.set(parked.length);
  }

  async render(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}

/** Sets a counter's series to a count kept elsewhere (at scrape time; counts only grow, so this never goes back). */
function setCounter<T extends string>(counter: Counter<T>, labels: Partial<Record<T, string>>, value: number): void {
  if (Object.keys(labels).length === 0) {
    counter.reset();
    counter.inc(value);
    return;
  }
  counter.remove(labels);
  counter.inc(labels, value);
}
