// Pure parsing and matching of the list filters: field selectors (`spec.nodeName=x,status.phase!=Failed`, only the
// fields the API server supports for each resource) and label selectors (=, ==, !=, in, notin, exists, !exists).
import { badRequest } from "./status.js";

export interface FieldRequirement {
  readonly field: string;
  readonly operator: "=" | "!=";
  readonly value: string;
}

export type LabelRequirement =
  | { readonly key: string; readonly operator: "in" | "notin"; readonly values: readonly string[] }
  | { readonly key: string; readonly operator: "exists" | "!exists" };

/** Parses a field selector, refusing fields not in `supported` the way the API server does (400). */
export function parseFieldSelector(selector: string, supported: readonly string[]): FieldRequirement[] {
  if (selector.trim() === "") return [];
  return selector.split(",").map((term) => {
    const match = /^\s*([^=!\s]+)\s*(==|!=|=)\s*(.*?)\s*$/.exec(term);
    if (!match) throw badRequest(`invalid field selector: '${term}'`);
    const [, field = "", operator, value = ""] = match;
    if (!supported.includes(field)) throw badRequest(`field label not supported: ${field}`);
    return { field, operator: operator === "!=" ? "!=" : "=", value };
  });
}

/** The value at a dotted path, as the API server compares it (a string; missing = `missing`, default ""). */
export function fieldValue(object: unknown, field: string, missing = ""): string {
  let current: unknown = object;
  for (const part of field.split(".")) {
    if (typeof current !== "object" || current === null) return missing;
    current = (current as Record<string, unknown>)[part];
  }
  if (current === undefined || current === null) return missing;
  return typeof current === "string" ? current : String(current);
}

/** True when every requirement holds; `defaults` gives what a left-out field reads as (booleans: "false"). */
export function matchesFields(
  object: unknown,
  requirements: readonly FieldRequirement[],
  defaults: Readonly<Record<string, string>> = {},
): boolean {
  return requirements.every(
    (r) => (fieldValue(object, r.field, defaults[r.field]) === r.value) === (r.operator === "="),
  );
}

/** Splits on commas that are not inside parentheses. */
function splitTerms(selector: string): string[] {
  const terms: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < selector.length; i++) {
    if (selector[i] === "(") depth++;
    else if (selector[i] === ")") depth--;
    else if (selector[i] === "," && depth === 0) {
      terms.push(selector.slice(start, i));
      start = i + 1;
    }
  }
  terms.push(selector.slice(start));
  return terms.map((t) => t.trim()).filter((t) => t !== "");
}

function parseLabelTerm(term: string): LabelRequirement {
  const setMatch = /^(\S+)\s+(in|notin)\s*\(([^)]*)\)$/.exec(term);
  if (setMatch) {
    const values = (setMatch[3] ?? "")
      .split(",")
      .map((v) => v.trim())
      .filter((v) => v !== "");
    return { key: setMatch[1] ?? "", operator: setMatch[2] === "in" ? "in" : "notin", values };
  }
  const equality = /^([^=!\s]+)\s*(==|!=|=)\s*(\S*)$/.exec(term);
  if (equality)
    return { key: equality[1] ?? "", operator: equality[2] === "!=" ? "notin" : "in", values: [equality[3] ?? ""] };
  const exists = /^(!?)([^=!\s(),]+)$/.exec(term);
  if (exists) return { key: exists[2] ?? "", operator: exists[1] === "!" ? "!exists" : "exists" };
  throw badRequest(`unable to parse requirement: invalid label selector: '${term}'`);
}

export function parseLabelSelector(selector: string): LabelRequirement[] {
  return splitTerms(selector).map(parseLabelTerm);
}

export function matchesLabels(
  labels: Readonly<Record<string, string>> | undefined,
  requirements: readonly LabelRequirement[],
): boolean {
  const own = labels ?? {};
  return requirements.every((r) => {
    const present = Object.hasOwn(own, r.key);
    switch (r.operator) {
      case "exists":
        return present;
      case "!exists":
        return !present;
      case "in":
        return present && r.values.includes(own[r.key] ?? "");
      case "notin":
        return !present || !r.values.includes(own[r.key] ?? "");
    }
  });
}

/** A metav1.LabelSelector (matchLabels + matchExpressions) as requirements. An empty selector matches everything. */
export function labelSelectorRequirements(selector: {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}): LabelRequirement[] {
  const fromLabels: LabelRequirement[] = Object.entries(selector.matchLabels ?? {}).map(([key, value]) => ({
    key,
    operator: "in",
    values: [value],
  }));
  const fromExpressions: LabelRequirement[] = (selector.matchExpressions ?? []).map((e) => {
    const operator = e.operator.toLowerCase();
    if (operator === "in" || operator === "notin") return { key: e.key, operator, values: e.values ?? [] };
    return { key: e.key, operator: operator === "exists" ? "exists" : "!exists" };
  });
  return [...fromLabels, ...fromExpressions];
}
