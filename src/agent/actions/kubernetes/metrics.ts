// Metrics of the kubernetes action, registered on the agent's registry only when the section is configured.
// Low cardinality by design: outcomes only, never an event id, pod or node name.
import { Counter, Histogram, type Registry } from "../../observability/prom-client.js";
import { kubernetesOutcomes } from "@sef/contract/record.js";

export const evictionOutcomes = ["evicted", "pdb_refused", "throttled", "gone", "error"] as const;
export type EvictionMetricOutcome = (typeof evictionOutcomes)[number];

export class KubernetesMetrics {
  readonly drainDuration: Histogram<"outcome">;
  readonly evictions: Counter<"outcome">;
  readonly steps: Counter<"outcome">;
  readonly nodeMismatch: Counter;
  readonly apiErrors: Counter;

  constructor(registry: Registry) {
    const registers = [registry];
    this.drainDuration = new Histogram({
      name: "sef_kubernetes_drain_duration_seconds",
      help: "Time from the start of a drain to its end, by outcome (drained, incomplete)",
      labelNames: ["outcome"] as const,
      buckets: [1, 5, 10, 30, 60, 120, 300, 600, 1200],
      registers,
    });
    this.evictions = new Counter({
      name: "sef_kubernetes_evictions_total",
      help: "Eviction requests by outcome (evicted, pdb_refused: a PodDisruptionBudget said 429, throttled: 429 without a budget, gone, error)",
      labelNames: ["outcome"] as const,
      registers,
    });
    this.steps = new Counter({
      name: "sef_kubernetes_steps_total",
      help: "Node steps taken, by outcome (as in Kubernetes records)",
      labelNames: ["outcome"] as const,
      registers,
    });
    this.nodeMismatch = new Counter({
      name: "sef_kubernetes_node_mismatch_total",
      help: "Events not acted on because the Node named by NODE_NAME is not this VM (providerID vs instance metadata)",
      registers,
    });
    this.apiErrors = new Counter({
      name: "sef_kubernetes_api_errors_total",
      help: "Kubernetes API requests that failed (steps retried)",
      registers,
    });
    for (const outcome of evictionOutcomes) this.evictions.inc({ outcome }, 0);
    for (const outcome of kubernetesOutcomes) this.steps.inc({ outcome }, 0);
  }
}
