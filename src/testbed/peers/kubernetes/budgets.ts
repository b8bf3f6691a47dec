// PodDisruptionBudgets over the stored pods: which budgets cover a pod, each budget's live status (pdb.ts arithmetic
// on the matching pods), and the testbed's controls that hold a budget at zero disruptions, or unprocessed by the
// disruption controller, until a given time.
import type { KubeObject } from "./objects.js";
import { budgetStatus, type BudgetSpec, type BudgetStatus } from "./pdb.js";
import { labelSelectorRequirements, matchesLabels } from "./selectors.js";
import { objectKey, type ClusterStore } from "./store.js";

interface BudgetSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

function selectorOf(pdb: KubeObject): BudgetSelector | undefined {
  return (pdb.spec as { selector?: BudgetSelector } | undefined)?.selector;
}

function isHealthy(pod: KubeObject): boolean {
  if (pod.metadata.deletionTimestamp) return false;
  const status = pod.status as { phase?: string; conditions?: { type: string; status: string }[] } | undefined;
  return (
    status?.phase === "Running" && (status.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True")
  );
}

function holdUntil(map: Map<string, number>, key: string, nowMs: number, forMs: number): void {
  if (forMs <= 0) map.delete(key);
  else map.set(key, nowMs + forMs);
}

export class DisruptionBudgets {
  /** Monotonic ms until which a budget allows no disruption, by namespace/name. */
  private readonly blockedUntilMs = new Map<string, number>();
  /** Monotonic ms until which the disruption controller has not processed a budget's latest generation. */
  private readonly processingUntilMs = new Map<string, number>();

  constructor(private readonly store: ClusterStore) {}

  /** Allow no disruption for `forMs` from now (Infinity = until `unblock`); 0 lifts the block. */
  block(namespace: string, name: string, forMs: number): void {
    holdUntil(this.blockedUntilMs, objectKey(namespace, name), this.store.clock.monotonicNowMs(), forMs);
  }

  isBlocked(namespace: string, name: string): boolean {
    const until = this.blockedUntilMs.get(objectKey(namespace, name));
    return until !== undefined && this.store.clock.monotonicNowMs() < until;
  }

  /** status.observedGeneration lags metadata.generation for `forMs` from now (0 ends it): evictions get 429 + Retry-After 10. */
  holdProcessing(namespace: string, name: string, forMs: number): void {
    holdUntil(this.processingUntilMs, objectKey(namespace, name), this.store.clock.monotonicNowMs(), forMs);
  }

  isProcessing(namespace: string, name: string): boolean {
    const until = this.processingUntilMs.get(objectKey(namespace, name));
    return until !== undefined && this.store.clock.monotonicNowMs() < until;
  }

  /** Budgets in the pod's namespace whose (non-empty) selector matches the pod's labels. */
  budgetsFor(pod: KubeObject): KubeObject[] {
    return this.store.list("poddisruptionbudgets", pod.metadata.namespace).filter((pdb) => {
      const selector = selectorOf(pdb);
      if (!selector) return false;
      const requirements = labelSelectorRequirements(selector);
      return requirements.length > 0 && matchesLabels(pod.metadata.labels, requirements);
    });
  }

  statusOf(pdb: KubeObject): BudgetStatus {
    const namespace = pdb.metadata.namespace ?? "default";
    const requirements = labelSelectorRequirements(selectorOf(pdb) ?? {});
    const pods = this.store
      .list("pods", namespace)
      .filter((pod) => requirements.length > 0 && matchesLabels(pod.metadata.labels, requirements));
    const spec = pdb.spec as BudgetSpec;
    return budgetStatus(
      spec,
      { expectedPods: pods.length, currentHealthy: pods.filter(isHealthy).length },
      this.isBlocked(namespace, pdb.metadata.name),
    );
  }

  /** The budget with its status filled in as the disruption controller would have it now. */
  withLiveStatus(pdb: KubeObject): KubeObject {
    const status = this.statusOf(pdb);
    const conditionTrue = status.disruptionsAllowed > 0;
    const generation = pdb.metadata.generation ?? 1;
    return {
      ...pdb,
      status: {
        observedGeneration: this.isProcessing(pdb.metadata.namespace ?? "default", pdb.metadata.name)
          ? generation - 1
          : generation,
        disruptionsAllowed: status.disruptionsAllowed,
        currentHealthy: status.currentHealthy,
        desiredHealthy: status.desiredHealthy,
        expectedPods: status.expectedPods,
        conditions: [
          {
            type: "DisruptionAllowed",
            status: conditionTrue ? "True" : "False",
            reason: conditionTrue ? "SufficientPods" : "InsufficientPods",
            message: "",
            observedGeneration: pdb.metadata.generation ?? 1,
            lastTransitionTime: pdb.metadata.creationTimestamp,
          },
        ],
      },
    };
  }
}
