// `sef fleet` metrics (prom-client, one registry): records read, notifications by target/action/outcome, owned
// partitions and lag per partition. Every series a dashboard needs exists from start.
import { Counter, Gauge, Registry, collectDefaultMetrics } from "prom-client";

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

export class FleetMetrics {
  readonly registry = new Registry();
  readonly records = new Counter({
    name: "sef_fleet_records_total",
    help: "Event Hubs events read, by outcome (folded, other, malformed-json, unknown-version, contract, not-a-record, event-id, too-large, wrong-partition, event-full, partition-full, rate-limited, partition-rate-limited, unfoldable, unplannable)",
    labelNames: ["outcome"] as const,
    registers: [this.registry],
  });
  readonly changesIgnored = new Counter({
    name: "sef_fleet_event_changes_ignored_total",
    help: "Changes records offered to a paged event's type, description or NotBefore, noted and not applied, by field",
    labelNames: ["field"] as const,
    registers: [this.registry],
  });
  readonly notifications = new Counter({
    name: "sef_fleet_notifications_total",
    help: "Notification attempts by target, action (trigger, update, resolve) and outcome (sent, retried, dead_lettered)",
    labelNames: ["target", "action", "outcome"] as const,
    registers: [this.registry],
  });
  readonly inDoubt = new Counter({
    name: "sef_fleet_notifications_in_doubt_total",
    help: "Notifications sent again while the target may already have them, by target, action and cause: claim_taken_over (a claim left by an instance that stopped mid-send), attempt_unanswered (a timeout or a connection lost after the request was sent)",
    labelNames: ["target", "action", "cause"] as const,
    registers: [this.registry],
  });
  readonly outcomeSaves = new Counter({
    name: "sef_fleet_outcome_saves_total",
    help: "Blob writes that saved notification outcomes (each saves every outcome answered since the previous one)",
    registers: [this.registry],
  });
  readonly outcomesSaved = new Counter({
    name: "sef_fleet_outcomes_saved_total",
    help: "Notification outcomes saved",
    registers: [this.registry],
  });
  readonly knownReporters = new Gauge({
    name: "sef_fleet_known_reporters",
    help: "Reporters (VMs) this instance remembers for the partitions' rate of new events (at most 50,000)",
    registers: [this.registry],
  });
  readonly reportersForgotten = new Counter({
    name: "sef_fleet_reporters_forgotten_total",
    help: "Reporters forgotten, or never remembered, because this instance remembers at most 50,000 (the not yet known go first)",
    registers: [this.registry],
  });
  readonly ownedPartitions = new Gauge({
    name: "sef_fleet_owned_partitions",
    help: "Partitions this instance owns",
    registers: [this.registry],
  });
  readonly partitionLag = new Gauge({
    name: "sef_fleet_partition_lag_events",
    help: "Events enqueued in a partition that this instance has not processed yet",
    labelNames: ["partition"] as const,
    registers: [this.registry],
  });
  readonly activeEvents = new Gauge({
    name: "sef_fleet_active_events",
    help: "Fleet events not yet ended, over owned partitions",
    registers: [this.registry],
  });

  constructor(targets: readonly string[] = []) {
    for (const field of ["eventType", "description", "notBefore"]) this.changesIgnored.inc({ field }, 0);
    for (const outcome of recordOutcomes) this.records.inc({ outcome }, 0);
    for (const target of targets)
      for (const action of ["trigger", "update", "resolve"]) {
        for (const outcome of ["sent", "retried", "dead_lettered"])
          this.notifications.inc({ target, action, outcome }, 0);
        for (const cause of ["claim_taken_over", "attempt_unanswered"]) this.inDoubt.inc({ target, action, cause }, 0);
      }
    this.ownedPartitions.set(0);
    this.knownReporters.set(0);
    this.activeEvents.set(0);
    const defaults = processDefaultMetrics();
    for (const { name } of defaults.getMetricsAsArray()) this.registry.registerMetric(defaults.getSingleMetric(name)!);
  }
}
