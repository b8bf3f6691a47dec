// ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1) evaluation for tests: a rendered policy's match rules,
// matchConditions, variables and validations run by @bufbuild/cel on one request, as the API server runs them, with
// the objects as the API server decodes them (integers as CEL ints, date-times as timestamps at second precision).
import { celEnv, isCelError, parse, plan, type CelInput, type CelResult } from "@bufbuild/cel";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";

export interface PolicyManifest {
  kind: "ValidatingAdmissionPolicy";
  metadata: { name: string };
  spec: {
    failurePolicy: string;
    matchConstraints: {
      resourceRules: { apiGroups: string[]; apiVersions: string[]; operations: string[]; resources: string[] }[];
    };
    matchConditions?: { name: string; expression: string }[];
    variables?: { name: string; expression: string }[];
    validations: { expression: string; message: string; reason: string }[];
  };
}

/** One API request as admission sees it (core group, v1). */
export interface AdmissionAttempt {
  operation: "CREATE" | "UPDATE" | "DELETE";
  /** The resource's plural name, e.g. "nodes". */
  resource: string;
  username: string;
  /** The authenticated user's extra (a pod-bound service account token: pod-name, node-name, …). */
  extra?: Record<string, string[]>;
  /** The object after the request (null for DELETE). */
  object: unknown;
  /** The object before it (null for CREATE). */
  oldObject: unknown;
}

/** Whether the policy applies to the request and, if so, the messages of the validations that refuse it. */
export type Verdict = { applies: false } | { applies: true; refusals: string[] };

/** Fields the API server decodes as metav1.Time (CEL timestamps; RFC 3339 at second precision). */
const timeFields = new Set([
  "timeAdded",
  "creationTimestamp",
  "deletionTimestamp",
  "firstTimestamp",
  "lastTimestamp",
  "lastHeartbeatTime",
  "lastTransitionTime",
]);

/** A JSON value as CEL input, as Kubernetes' typed CEL sees it: integers are ints, date-times are timestamps. */
export function celInput(value: unknown, key = ""): CelInput {
  if (typeof value === "number") return Number.isInteger(value) ? BigInt(value) : value;
  if (typeof value === "string" && timeFields.has(key)) {
    const ms = Date.parse(value);
    if (Number.isNaN(ms)) throw new Error(`${key}: ${value} is not a date-time`);
    return timestampFromMs(Math.floor(ms / 1000) * 1000);
  }
  if (Array.isArray(value)) return value.map((item) => celInput(item, key));
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, celInput(v, k)])) as CelInput;
  }
  return value as CelInput;
}

const env = celEnv();
const plans = new Map<string, (bindings: Record<string, CelInput>) => CelResult>();

/** The expression's value; a parse or evaluation error throws, naming the expression. */
function evaluate(expression: string, bindings: Record<string, CelInput>): unknown {
  let planned = plans.get(expression);
  if (planned === undefined) {
    planned = plan(env, parse(expression));
    plans.set(expression, planned);
  }
  const result = planned(bindings);
  if (isCelError(result)) throw new Error(`${expression}: ${result.message}`);
  return result;
}

function matches(policy: PolicyManifest, attempt: AdmissionAttempt): boolean {
  return policy.spec.matchConstraints.resourceRules.some(
    (rule) =>
      rule.apiGroups.includes("") &&
      rule.apiVersions.includes("v1") &&
      rule.operations.includes(attempt.operation) &&
      rule.resources.includes(attempt.resource),
  );
}

/**
 * Runs the policy on the request. Variables are evaluated in order (each sees the ones before it as `variables.*`);
 * an expression that fails to evaluate refuses the request (the policies here are failurePolicy Fail).
 */
export function admit(policy: PolicyManifest, attempt: AdmissionAttempt): Verdict {
  if (!matches(policy, attempt)) return { applies: false };
  const request = {
    operation: attempt.operation,
    resource: { group: "", version: "v1", resource: attempt.resource },
    userInfo: { username: attempt.username, ...(attempt.extra ? { extra: attempt.extra } : {}) },
  };
  const bindings: Record<string, CelInput> = {
    request: celInput(request),
    object: celInput(attempt.object),
    oldObject: celInput(attempt.oldObject),
  };
  try {
    for (const condition of policy.spec.matchConditions ?? []) {
      if (evaluate(condition.expression, bindings) !== true) return { applies: false };
    }
    const variables: Record<string, CelInput> = {};
    for (const variable of policy.spec.variables ?? []) {
      variables[variable.name] = evaluate(variable.expression, { ...bindings, variables }) as CelInput;
    }
    const refusals = policy.spec.validations
      .filter((v) => evaluate(v.expression, { ...bindings, variables }) !== true)
      .map((v) => v.message);
    return { applies: true, refusals };
  } catch (error) {
    return { applies: true, refusals: [`failurePolicy ${policy.spec.failurePolicy}: ${(error as Error).message}`] };
  }
}
