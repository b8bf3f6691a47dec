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

/** A metric's name, help and label names, and `collect` (run at each scrape) for one whose value is kept elsewhere. */
type MetricArgs<L extends string> = [name: string, help: string, labelNames?: readonly L[], collect?: () => void];

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

  readonly polls: Counter<"outcome"> = this.counter(
    "sef_polls_total",
    "IMDS scheduled-events polls by outcome",
    ["outcome"],
    () => {
      const outcomes = this.source?.outcomes;
      if (outcomes) for (const outcome of pollOutcomes) setCounter(this.polls, { outcome }, outcomes[outcome]);
    },
  );
  readonly notModified: Counter = this.counter(
    "sef_imds_not_modified_total",
    "Scheduled-events polls IMDS answered 304 Not Modified (If-None-Match matched the last ETag)",
    [],
    () => {
      if (this.source) setCounter(this.notModified, {}, this.source.conditional().notModified);
    },
  );
  readonly unchangedBodies: Counter = this.counter(
    "sef_imds_unchanged_bodies_total",
    "Scheduled-events polls answered 200 with the same body as the last one (not parsed again)",
    [],
    () => {
      if (this.source) setCounter(this.unchangedBodies, {}, this.source.conditional().unchangedBodies);
    },
  );
  /** Poll latencies not yet in the histogram: a poll a second appends a number, the scrape (or a full list) observes them. */
  private readonly pendingPollSeconds: number[] = [];
  readonly pollLatency: Histogram = new Histogram({
    name: "sef_poll_duration_seconds",
    help: "Latency of IMDS scheduled-events polls",
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 60, 120],
    registers: [this.registry],
    collect: () => this.flushPollLatencies(),
  });
  readonly lastGoodPollTimestamp: Gauge = this.gauge(
    "sef_last_good_poll_timestamp_seconds",
    "Unix time of the last successful poll",
    [],
    () => {
      const wallMs = this.source?.lastGoodPollWallMs();
      if (wallMs !== undefined && wallMs !== null) this.lastGoodPollTimestamp.set(wallMs / 1000);
    },
  );
  readonly lastGoodPollAge = this.gauge(
    "sef_last_good_poll_age_seconds",
    "Seconds since the last successful poll (-1 before the first)",
  );
  readonly malformedEvents = this.counter(
    "sef_imds_events_malformed_total",
    "Events IMDS listed that could not be read (each distinct one counted once), by reason",
    ["reason"],
  );
  readonly incarnation: Gauge = this.gauge(
    "sef_document_incarnation",
    "DocumentIncarnation of the last processed document",
    [],
    () => {
      const incarnation = this.source?.incarnation();
      if (incarnation !== undefined && incarnation !== null) this.incarnation.set(incarnation);
    },
  );
  readonly eventsByStatus: Gauge<"status"> = this.gauge(
    "sef_events",
    "Events currently known, by status",
    ["status"],
    () => {
      if (this.source)
        for (const status of ["Scheduled", "Started"] as const)
          this.eventsByStatus.set({ status }, this.source.eventsWithStatus(status));
    },
  );
  readonly recordsWritten = this.counter("sef_records_total", "Records appended to the outbox, by type", ["type"]);
  readonly outboxDepth = this.gauge("sef_outbox_depth", "Records not yet delivered, per sink", ["sink"]);
  readonly outboxOldestAge = this.gauge(
    "sef_outbox_oldest_age_seconds",
    "Age of the oldest undelivered record, per sink (0 when empty)",
    ["sink"],
  );
  readonly outboxParked = this.gauge(
    "sef_outbox_parked_records",
    "Records held for sinks no longer configured (parked until a sink of that name returns or `sef outbox drop-sink` gives it up); per sink: sef outbox status",
  );
  readonly outboxParkedSinks = this.gauge(
    "sef_outbox_parked_sinks",
    "Sinks no longer configured whose records are kept (parked)",
  );
  readonly sent = this.counter("sef_sink_sent_total", "Records delivered, per sink", ["sink"]);
  readonly retries = this.counter("sef_sink_retries_total", "Send attempts that will be retried, per sink", ["sink"]);
  readonly deadLetters = this.counter("sef_sink_dead_letters_total", "Records dead-lettered, per sink", ["sink"]);
  readonly throttledSeconds = this.counter(
    "sef_sink_throttled_seconds_total",
    "Time spent waiting on a server's retry-after hint, per sink",
    ["sink"],
  );
  readonly storeErrors = this.counter("sef_store_errors_total", "Failed store writes");
  readonly outboxEvicted = this.counter(
    "sef_outbox_evicted_records_total",
    "Records evicted from the outbox over maxOutboxBytes, by sink and reason (over_cap: pending for the sink; over_cap_dead_lettered: already dead-lettered)",
    ["sink", "reason"],
  );
  readonly storeDroppedRecords = this.counter(
    "sef_store_dropped_records_total",
    "Records removed from the outbox by the size cap before every sink had them",
  );
  readonly approvals = this.counter("sef_approvals_total", "Approval attempts by outcome", ["outcome"]);
  readonly hooks = this.counter("sef_hooks_total", "Hook runs by outcome", ["outcome"]);
  readonly timeGeneratedAgeWarnings = this.counter(
    "sef_time_generated_age_warnings_total",
    "Times the oldest undelivered record neared the 2-day TimeGenerated limit of Log Analytics",
    ["sink"],
  );

  readonly sinkFailing = this.gauge("sef_sink_failing", "1 while a sink's sends fail (it is retrying), else 0", [
    "sink",
  ]);
  readonly clockSteps = this.counter(
    "sef_clock_steps_total",
    "Wall-clock steps detected between polls (wall and monotonic time disagreed), by direction",
    ["direction"],
  );

  /** A counter of this registry (see `MetricArgs`). */
  private counter<L extends string = never>(...args: MetricArgs<L>): Counter<L> {
    return new Counter(this.configuration(...args));
  }

  /** A gauge of this registry (see `MetricArgs`). */
  private gauge<L extends string = never>(...args: MetricArgs<L>): Gauge<L> {
    return new Gauge(this.configuration(...args));
  }

  private configuration<L extends string>(...[name, help, labelNames = [], collect]: MetricArgs<L>) {
    return { name, help, labelNames, registers: [this.registry], ...(collect && { collect }) };
  }

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
