// `sef fleet` metrics (prom-client, one registry): records read, notifications by target/action/outcome, owned
// partitions and lag per partition. Every series a dashboard needs exists from start.
import { Counter, Gauge, Registry, collectDefaultMetrics } from "prom-client";
import { maxKnownReporters } from "./partition-bounds.js";

let processMetrics: Registry | undefined;
/**
 * prom-client's default metrics (process, heap, an event-loop monitor, a GC observer), collected once per process in a
 * registry of their own: each collector starts a monitor that never stops, so one per FleetMetrics would pile up.
 */
function processDefaultMetrics(): Registry {
  if (processMetrics === undefined) {
    processMetrics = new Registry();
    collectDefaultMetrics({ register: processMetrics, prefix: "sef_fleet_" });
  }
  return processMetrics;
}

/** `sef_fleet_records_total{outcome}`: how each event read ended (see the README's "Untrusted records"). */
export const recordOutcomes = [
  "folded",
  "other",
  "malformed-json",
  "unknown-version",
  "contract",
  "not-a-record",
  "event-id",
  "too-large",
  "wrong-partition",
  "event-full",
  "partition-full",
  "rate-limited",
  "partition-rate-limited",
  "unfoldable",
  "unplannable",
] as const;

/** The notification targets the metrics are made for (`new FleetMetrics(targets)`), as a label's values. */
const everyTarget = Symbol("the targets given to the constructor");

/**
 * A metric's label names, each with the values whose series exist (at 0) from the start: every combination of one value
 * per label. A label given no values (`[]`) has series only once they are written.
 */
type SeriesFromStart<L extends string> = { readonly [K in L]: readonly string[] | typeof everyTarget };

const notificationActions = ["trigger", "update", "resolve"] as const;

export class FleetMetrics {
  readonly registry = new Registry();
  /** Each metric of the registry with the series it has from the start (created by the constructor). */
  private readonly declared: Array<{ metric: Counter<string> | Gauge<string>; series: SeriesFromStart<string> }> = [];

  readonly records = this.counter(
    "sef_fleet_records_total",
    "Event Hubs events read, by outcome (folded, other, malformed-json, unknown-version, contract, not-a-record, event-id, too-large, wrong-partition, event-full, partition-full, rate-limited, partition-rate-limited, unfoldable, unplannable)",
    { outcome: recordOutcomes },
  );
  readonly changesIgnored = this.counter(
    "sef_fleet_event_changes_ignored_total",
    "Changes records offered to a paged event's type, description or NotBefore, noted and not applied, by field",
    { field: ["eventType", "description", "notBefore"] },
  );
  readonly notifications = this.counter(
    "sef_fleet_notifications_total",
    "Notification attempts by target, action (trigger, update, resolve) and outcome (sent, retried, dead_lettered)",
    { target: everyTarget, action: notificationActions, outcome: ["sent", "retried", "dead_lettered"] },
  );
  readonly inDoubt = this.counter(
    "sef_fleet_notifications_in_doubt_total",
    "Notifications sent again while the target may already have them, by target, action and cause: claim_taken_over (a claim left by an instance that stopped mid-send), attempt_unanswered (a timeout or a connection lost after the request was sent)",
    { target: everyTarget, action: notificationActions, cause: ["claim_taken_over", "attempt_unanswered"] },
  );
  readonly outcomeSaves = this.counter(
    "sef_fleet_outcome_saves_total",
    "Blob writes that saved notification outcomes (each saves every outcome answered since the previous one)",
  );
  readonly outcomesSaved = this.counter("sef_fleet_outcomes_saved_total", "Notification outcomes saved");
  readonly knownReporters = this.gauge(
    "sef_fleet_known_reporters",
    `Reporters (VMs) this instance remembers for the partitions' rate of new events (at most ${maxKnownReporters})`,
  );
  readonly reportersForgotten = this.counter(
    "sef_fleet_reporters_forgotten_total",
    `Reporters forgotten, or never remembered, because this instance remembers at most ${maxKnownReporters} (the not yet known go first)`,
  );
  readonly ownedPartitions = this.gauge("sef_fleet_owned_partitions", "Partitions this instance owns");
  readonly partitionLag = this.gauge(
    "sef_fleet_partition_lag_events",
    "Events enqueued in a partition that this instance has not processed yet",
    { partition: [] },
  );
  readonly activeEvents = this.gauge("sef_fleet_active_events", "Fleet events not yet ended, over owned partitions");

  constructor(targets: readonly string[] = []) {
    for (const { metric, series } of this.declared)
      for (const labels of combinations(series, targets)) metric.inc(labels, 0);
    const defaults = processDefaultMetrics();
    for (const { name } of defaults.getMetricsAsArray()) this.registry.registerMetric(defaults.getSingleMetric(name)!);
  }

  /** A counter of this registry, with the series it has from the start. */
  private counter<L extends string = never>(name: string, help: string, series = {} as SeriesFromStart<L>): Counter<L> {
    return this.declare(
      new Counter({ name, help, labelNames: labelNamesOf(series), registers: [this.registry] }),
      series,
    );
  }

  /** A gauge of this registry, with the series it has from the start. */
  private gauge<L extends string = never>(name: string, help: string, series = {} as SeriesFromStart<L>): Gauge<L> {
    return this.declare(
      new Gauge({ name, help, labelNames: labelNamesOf(series), registers: [this.registry] }),
      series,
    );
  }

  private declare<M extends Counter<string> | Gauge<string>>(metric: M, series: SeriesFromStart<string>): M {
    this.declared.push({ metric, series });
    return metric;
  }
}

function labelNamesOf<L extends string>(series: SeriesFromStart<L>): L[] {
  return Object.keys(series) as L[];
}

/** Every label set of `series` (one value per label; `everyTarget` stands for `targets`). */
function combinations(series: SeriesFromStart<string>, targets: readonly string[]): Array<Record<string, string>> {
  return Object.entries(series).reduce<Array<Record<string, string>>>(
    (sets, [label, values]) => {
      const labelValues = values === everyTarget ? targets : values;
      return sets.flatMap((set) => labelValues.map((value) => ({ ...set, [label]: value })));
    },
    [{}],
  );
}
