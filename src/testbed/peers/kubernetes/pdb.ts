// Pure PodDisruptionBudget arithmetic, as the disruption controller computes it: desired healthy pods from
// minAvailable / maxUnavailable (integers or percentages, rounded up) and the disruptions allowed now.

export type IntOrPercent = number | string;

export interface BudgetSpec {
  readonly minAvailable?: IntOrPercent;
  readonly maxUnavailable?: IntOrPercent;
}

export interface BudgetCounts {
  /** Pods the budget covers (the peer has no controllers: the matching pods that still exist, terminating or not). */
  readonly expectedPods: number;
  /** Matching pods that are Ready and not terminating. */
  readonly currentHealthy: number;
}

export interface BudgetStatus {
  readonly expectedPods: number;
  readonly currentHealthy: number;
  readonly desiredHealthy: number;
  readonly disruptionsAllowed: number;
}

/** An int-or-percent scaled against `total`; percentages round up, like the controller's `roundUp: true`. */
export function scaledValue(value: IntOrPercent, total: number): number {
  if (typeof value === "number") return value;
  const percent = /^(\d+)%$/.exec(value.trim());
  if (!percent) {
    const asInteger = Number(value);
    if (Number.isInteger(asInteger)) return asInteger;
    throw new Error(`invalid value for IntOrString: "${value}"`);
  }
  return Math.ceil((Number(percent[1]) * total) / 100);
}

/** Status of a budget; `blocked` (the testbed's control) forces zero disruptions whatever the counts. */
export function budgetStatus(spec: BudgetSpec, counts: BudgetCounts, blocked = false): BudgetStatus {
  const { expectedPods, currentHealthy } = counts;
  let desiredHealthy: number;
  if (spec.maxUnavailable !== undefined) {
    desiredHealthy = Math.max(0, expectedPods - scaledValue(spec.maxUnavailable, expectedPods));
  } else {
    desiredHealthy = scaledValue(spec.minAvailable ?? 1, expectedPods);
  }
  if (blocked) desiredHealthy = Math.max(desiredHealthy, currentHealthy);
  const disruptionsAllowed = blocked ? 0 : Math.max(0, currentHealthy - desiredHealthy);
  return { expectedPods, currentHealthy, desiredHealthy, disruptionsAllowed };
}

/** The cause message the eviction subresource returns when the budget refuses (429). */
export function budgetRefusalMessage(budgetName: string, status: BudgetStatus): string {
  return `The disruption budget ${budgetName} needs ${status.desiredHealthy} healthy pods and has ${status.currentHealthy} currently`;
}
