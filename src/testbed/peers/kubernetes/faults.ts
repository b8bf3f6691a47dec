// The testbed's fault rules: "answer matching requests like this, for N requests or T ms" (API Priority and
// Fairness throttling, RBAC's 403, a 500, any Status), matched on the request's verb, resource, namespace and name.
// Pure bookkeeping on an injected monotonic clock; fault-answers.ts writes the answers.
import type { RequestInfo } from "./request-info.js";

/** Which requests a rule applies to; every field left out matches anything. Only resource requests are matched. */
export interface FaultMatch {
  /** Kubernetes verbs: get, list, watch, create, update, patch, delete, deletecollection (an eviction is create). */
  readonly verbs?: readonly string[];
  /** Resources, with the subresource when there is one: "nodes", "pods", "pods/eviction", "leases". */
  readonly resources?: readonly string[];
  readonly namespaces?: readonly string[];
  readonly names?: readonly string[];
}

export type FaultAnswer =
  /** API Priority and Fairness rejecting the request: 429, plain-text body, `Retry-After` (default 1 s). */
  | { readonly kind: "throttle"; readonly retryAfterSeconds?: number }
  /** RBAC refusing the request: 403 Forbidden Status naming the user (default system:serviceaccount:sef-system:sef). */
  | { readonly kind: "forbidden"; readonly user?: string }
  /** 500 InternalError Status, `Internal error occurred: <message>` (default: etcdserver: leader changed). */
  | { readonly kind: "internal-error"; readonly message?: string }
  /** Any Status; `retryAfterSeconds` > 0 adds details.retryAfterSeconds and the Retry-After header. */
  | {
      readonly kind: "status";
      readonly code: number;
      readonly reason: string;
      readonly message: string;
      readonly retryAfterSeconds?: number;
    };

export interface FaultRule {
  readonly match?: FaultMatch;
  readonly answer: FaultAnswer;
  /** Let this many matching requests through first (default 0). */
  readonly skip?: number;
  /** Answer this many matching requests, then stop (default: no limit). */
  readonly count?: number;
  /** Stop this long after the rule is added (default: until removed). */
  readonly forMs?: number;
}

/** A rule as installed: its id, when it ends, and how many requests it has seen and answered. */
export interface FaultRuleState extends FaultRule {
  readonly id: string;
  /** Matching requests seen (passed by `skip` or answered). */
  readonly seen: number;
  /** Requests answered with the fault. */
  readonly hits: number;
  readonly active: boolean;
}

interface Installed {
  readonly id: string;
  readonly rule: FaultRule;
  readonly untilMonotonicMs: number;
  seen: number;
  hits: number;
}

function listMatches(allowed: readonly string[] | undefined, value: string | undefined): boolean {
  return allowed === undefined || (value !== undefined && allowed.includes(value));
}

/** True when `match` covers the request (non-resource requests never match). */
export function faultMatches(match: FaultMatch | undefined, info: RequestInfo): boolean {
  if (!info.isResourceRequest) return false;
  return (
    listMatches(match?.verbs, info.verb) &&
    listMatches(match?.resources, info.resource) &&
    listMatches(match?.namespaces, info.namespace) &&
    listMatches(match?.names, info.name)
  );
}

/** Refuses rules the peer could not apply, naming the field. */
export function validateFaultRule(rule: FaultRule): void {
  const kinds = ["throttle", "forbidden", "internal-error", "status"];
  if (typeof rule !== "object" || rule === null || !kinds.includes(rule.answer?.kind))
    throw new Error(`fault answer.kind must be one of ${kinds.join(", ")}`);
  for (const field of ["skip", "count", "forMs"] as const) {
    const value = rule[field];
    if (value !== undefined && !(typeof value === "number" && value >= 0))
      throw new Error(`fault ${field} must be a number >= 0`);
  }
  if (
    rule.answer.kind === "status" &&
    !(Number.isInteger(rule.answer.code) && rule.answer.code >= 400 && rule.answer.code <= 599)
  )
    throw new Error("fault answer.code must be an HTTP error status (400-599)");
  if (
    rule.answer.kind === "throttle" &&
    rule.answer.retryAfterSeconds !== undefined &&
    !(Number.isInteger(rule.answer.retryAfterSeconds) && rule.answer.retryAfterSeconds >= 1)
  ) {
    throw new Error("fault answer.retryAfterSeconds must be a whole number of seconds >= 1");
  }
}

export class FaultRules {
  private readonly installed: Installed[] = [];
  private nextId = 1;

  constructor(private readonly monotonicNowMs: () => number) {}

  /** Installs a rule (after those already installed: the first matching active rule answers); returns its id. */
  add(rule: FaultRule): string {
    validateFaultRule(rule);
    const id = `fault-${this.nextId++}`;
    const untilMonotonicMs = rule.forMs === undefined ? Number.POSITIVE_INFINITY : this.monotonicNowMs() + rule.forMs;
    this.installed.push({ id, rule, untilMonotonicMs, seen: 0, hits: 0 });
    return id;
  }

  remove(id: string): boolean {
    const index = this.installed.findIndex((i) => i.id === id);
    if (index >= 0) this.installed.splice(index, 1);
    return index >= 0;
  }

  clear(): void {
    this.installed.length = 0;
  }

  private isActive(entry: Installed, nowMs: number): boolean {
    return nowMs < entry.untilMonotonicMs && (entry.rule.count === undefined || entry.hits < entry.rule.count);
  }

  /** The rule that answers this request (counting it), or undefined when the request goes through. */
  take(info: RequestInfo): { id: string; answer: FaultAnswer } | undefined {
    const nowMs = this.monotonicNowMs();
    for (const entry of this.installed) {
      if (!this.isActive(entry, nowMs) || !faultMatches(entry.rule.match, info)) continue;
      entry.seen++;
      if (entry.seen <= (entry.rule.skip ?? 0)) continue;
      entry.hits++;
      return { id: entry.id, answer: entry.rule.answer };
    }
    return undefined;
  }

  list(): FaultRuleState[] {
    const nowMs = this.monotonicNowMs();
    return this.installed.map((entry) => ({
      ...structuredClone(entry.rule),
      id: entry.id,
      seen: entry.seen,
      hits: entry.hits,
      active: this.isActive(entry, nowMs),
    }));
  }
}
