// A small evaluator of the Azure Policy rule language, the subset the sef definitions use: allOf/anyOf/not, field and
// value conditions (equals, notEquals, like, notLike, in, notIn, contains, notContains, containsKey, notContainsKey,
// exists, greater, greaterOrEquals, less, lessOrEquals), count with where, and the template functions parameters,
// field, concat, length, toLower, coalesce, resourceGroup, createArray. Fields are read from a resource document as
// Azure Resource Graph shows it (`properties.…`), the image aliases from its image reference; string comparisons
// ignore case, as Azure Policy's do.
export type Json = unknown;

export interface Context {
  readonly resource: Record<string, Json>;
  readonly parameters: Readonly<Record<string, Json>>;
  readonly resourceGroup: string;
}

/** Top-level resource keys an alias path may start with (everything else is under `properties`). */
const topLevel = new Set([
  "identity",
  "sku",
  "zones",
  "plan",
  "extendedLocation",
  "tags",
  "location",
  "kind",
  "name",
  "type",
  "id",
]);

const lower = (v: Json): Json => (typeof v === "string" ? v.toLowerCase() : v);

function getCaseless(object: Json, key: string): Json {
  if (typeof object !== "object" || object === null || Array.isArray(object)) return undefined;
  const found = Object.keys(object).find((k) => k.toLowerCase() === key.toLowerCase());
  return found === undefined ? undefined : (object as Record<string, Json>)[found];
}

// ---- template expressions: "[fn(args)]" -------------------------------------------------------------------------

type Token = { kind: "string" | "number" | "name" | "punct"; text: string };

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (/\s/.test(c)) i++;
    else if (c === "'") {
      let value = "";
      i++;
      while (i < text.length && !(text[i] === "'" && text[i + 1] !== "'")) {
        value += text[i];
        i += text[i] === "'" ? 2 : 1;
      }
      i++;
      tokens.push({ kind: "string", text: value });
    } else if (/[0-9-]/.test(c)) {
      const m = /^-?\d+/.exec(text.slice(i))!;
      tokens.push({ kind: "number", text: m[0] });
      i += m[0].length;
    } else if (/[A-Za-z_]/.test(c)) {
      const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(text.slice(i))!;
      tokens.push({ kind: "name", text: m[0] });
      i += m[0].length;
    } else {
      tokens.push({ kind: "punct", text: c });
      i++;
    }
  }
  return tokens;
}

/** Evaluates a template expression string (`[...]`); other strings are literals (`[[` escapes a leading bracket). */
export function expression(value: Json, context: Context, current?: Element): Json {
  if (typeof value !== "string" || !value.startsWith("[") || value.startsWith("[["))
    return typeof value === "string" && value.startsWith("[[") ? value.slice(1) : value;
  const tokens = tokenize(value.slice(1, -1));
  let at = 0;
  const expect = (text: string): void => {
    if (tokens[at]?.text !== text) throw new Error(`${value}: expected ${text} at token ${at}`);
    at++;
  };
  const parse = (): Json => {
    const token = tokens[at++];
    if (token === undefined) throw new Error(`${value}: unexpected end`);
    if (token.kind === "string") return token.text;
    if (token.kind === "number") return Number(token.text);
    if (token.kind !== "name") throw new Error(`${value}: unexpected ${token.text}`);
    expect("(");
    const args: Json[] = [];
    while (tokens[at]?.text !== ")") {
      args.push(parse());
      if (tokens[at]?.text === ",") at++;
    }
    expect(")");
    let result = call(token.text, args, context, current);
    while (tokens[at]?.text === ".") {
      at++;
      result = getCaseless(result, tokens[at++]!.text);
    }
    return result;
  };
  const result = parse();
  if (at !== tokens.length) throw new Error(`${value}: trailing tokens`);
  return result;
}

function call(name: string, args: Json[], context: Context, current?: Element): Json {
  switch (name.toLowerCase()) {
    case "parameters":
      if (!(String(args[0]) in context.parameters)) throw new Error(`no parameter ${String(args[0])}`);
      return context.parameters[String(args[0])];
    case "field":
      return fieldValue(String(args[0]), context, current);
    case "concat":
      return args.every(Array.isArray) ? args.flat() : args.map(String).join("");
    case "length":
      return Array.isArray(args[0]) || typeof args[0] === "string"
        ? args[0].length
        : Object.keys(args[0] as object).length;
    case "tolower":
      return String(args[0]).toLowerCase();
    case "coalesce":
      return args.find((a) => a !== null && a !== undefined) ?? null;
    case "createarray":
      return args;
    case "resourcegroup":
      return { name: context.resourceGroup };
  }
  throw new Error(`template function ${name} is not supported here`);
}

// ---- fields -----------------------------------------------------------------------------------------------------

/** The array element a count's where is evaluated on: field paths starting with `prefix[*]` read from it. */
interface Element {
  readonly prefix: string;
  readonly value: Json;
}

/** Walks a dotted path with `[*]` (collecting every element) from a value; undefined when a segment is missing. */
function walk(value: Json, path: string): Json {
  let values: Json[] = [value];
  let spread = false;
  for (const raw of path.split(".").filter((s) => s !== "")) {
    const star = raw.endsWith("[*]");
    const key = star ? raw.slice(0, -3) : raw;
    // Aliases skip the `properties` level of nested resources (securityRules[*].direction is …[*].properties.direction).
    values = values.map((v) => getCaseless(v, key) ?? getCaseless(getCaseless(v, "properties"), key));
    if (star) {
      values = values.flatMap((v) => (Array.isArray(v) ? v : []));
      spread = true;
    }
  }
  return spread ? values : values[0];
}

/**
 * Aliases Azure names apart from the property paths, as Microsoft's built-in policies use them: the image a VM or a
 * scale set's model was created from.
 */
const imageAliases: Readonly<Record<string, string>> = {
  "microsoft.compute/imagepublisher": "publisher",
  "microsoft.compute/imageoffer": "offer",
  "microsoft.compute/imagesku": "sku",
  "microsoft.compute/imageid": "id",
};

function imageReference(resource: Record<string, Json>): Json {
  const profile = String(resource.type).toLowerCase().endsWith("/virtualmachinescalesets")
    ? getCaseless(resource.properties, "virtualMachineProfile")
    : resource.properties;
  return getCaseless(getCaseless(profile, "storageProfile"), "imageReference");
}

/**
 * A field's value: type, name, location, kind, id, tags, tags['x'], tags[x], identity.*, an image alias, or an alias
 * `Type/path`.
 */
export function fieldValue(field: string, context: Context, current?: Element): Json {
  const r = context.resource;
  const imageKey = imageAliases[field.toLowerCase()];
  if (imageKey !== undefined) return getCaseless(imageReference(r), imageKey);
  if (current !== undefined && field.toLowerCase().startsWith(`${current.prefix.toLowerCase()}[*]`)) {
    return walk(current.value, field.slice(current.prefix.length + 3));
  }
  const tag = /^tags\[(?:'(.*)'|(.*))\]$/i.exec(field);
  if (tag !== null) return getCaseless(r.tags, tag[1] ?? tag[2] ?? "");
  const slash = field.lastIndexOf("/");
  if (slash < 0) return walk(r, field);
  const type = field.slice(0, slash);
  if (String(r.type).toLowerCase() !== type.toLowerCase()) return undefined;
  const path = field.slice(slash + 1);
  const first = path.split(/[.[]/)[0]!;
  return topLevel.has(first) ? walk(r, path) : walk(r.properties, path);
}

// ---- conditions -------------------------------------------------------------------------------------------------

const operators = [
  "equals",
  "notEquals",
  "like",
  "notLike",
  "in",
  "notIn",
  "contains",
  "notContains",
  "containsKey",
  "notContainsKey",
  "exists",
  "greater",
  "greaterOrEquals",
  "less",
  "lessOrEquals",
] as const;

function like(value: Json, pattern: string): boolean {
  if (typeof value !== "string") return false;
  const regex = new RegExp(
    `^${pattern
      .split("*")
      .map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
      .join(".*")}$`,
    "i",
  );
  return regex.test(value);
}

function compare(value: Json, target: Json): number | undefined {
  if (typeof value === "number" && typeof target === "number") return value - target;
  if (typeof value === "string" && typeof target === "string")
    return value.toLowerCase().localeCompare(target.toLowerCase());
  return undefined;
}

/** One operator on one value (undefined: the field is missing). */
function test(operator: (typeof operators)[number], value: Json, target: Json): boolean {
  const missing = value === undefined || value === null;
  switch (operator) {
    case "equals":
      return !missing && lower(value) === lower(target);
    case "notEquals":
      return missing || lower(value) !== lower(target);
    case "like":
      return like(value, String(target));
    case "notLike":
      return !like(value, String(target));
    case "in":
      return !missing && (target as Json[]).some((t) => lower(t) === lower(value));
    case "notIn":
      return missing || !(target as Json[]).some((t) => lower(t) === lower(value));
    case "contains":
      return typeof value === "string" && value.toLowerCase().includes(String(target).toLowerCase());
    case "notContains":
      return !(typeof value === "string" && value.toLowerCase().includes(String(target).toLowerCase()));
    case "containsKey":
      return getCaseless(value, String(target)) !== undefined;
    case "notContainsKey":
      return getCaseless(value, String(target)) === undefined;
    case "exists":
      return (String(target).toLowerCase() === "true") === !missing;
    default: {
      const order = compare(value, target);
      if (order === undefined) return false;
      return operator === "greater"
        ? order > 0
        : operator === "greaterOrEquals"
          ? order >= 0
          : operator === "less"
            ? order < 0
            : order <= 0;
    }
  }
}

/** Evaluates a policy condition (an `if`, an existenceCondition, a count's where) on the context's resource. */
export function evaluate(condition: Json, context: Context, current?: Element): boolean {
  const c = condition as Record<string, Json>;
  if (Array.isArray(c.allOf)) return c.allOf.every((x) => evaluate(x, context, current));
  if (Array.isArray(c.anyOf)) return c.anyOf.some((x) => evaluate(x, context, current));
  if (c.not !== undefined) return !evaluate(c.not, context, current);
  const operator = operators.find((o) => o in c);
  if (operator === undefined) throw new Error(`no operator in ${JSON.stringify(condition)}`);
  const target = expression(c[operator], context, current);
  if (c.count !== undefined) {
    const count = c.count as { field: string; where?: Json };
    const field = String(expression(count.field, context, current));
    if (!field.endsWith("[*]")) throw new Error(`count.field must end with [*]: ${field}`);
    const items = fieldValue(field, context, current);
    const elements = Array.isArray(items) ? items : [];
    const prefix = field.slice(0, -3);
    const matching =
      count.where === undefined
        ? elements
        : elements.filter((value) => evaluate(count.where, context, { prefix, value }));
    return test(operator, matching.length, target);
  }
  if (c.value !== undefined) return test(operator, expression(c.value, context, current), target);
  if (c.field === undefined) throw new Error(`no field, value or count in ${JSON.stringify(condition)}`);
  const field = String(expression(c.field, context, current));
  const value = fieldValue(field, context, current);
  // `[*]` outside a count: true when every element passes (and so for none).
  if (
    field.includes("[*]") &&
    !(
      current !== undefined &&
      field.toLowerCase().startsWith(`${current.prefix.toLowerCase()}[*]`) &&
      !field.slice(current.prefix.length + 3).includes("[*]")
    )
  ) {
    return (Array.isArray(value) ? value : []).every((v) => test(operator, v, target));
  }
  return test(operator, value, target);
}

/** Every `field` a rule names (conditions and counts, expressions evaluated with the given parameters). */
export function fieldsNamed(condition: Json, parameters: Readonly<Record<string, Json>>): string[] {
  if (typeof condition !== "object" || condition === null) return [];
  if (Array.isArray(condition)) return condition.flatMap((c) => fieldsNamed(c, parameters));
  const c = condition as Record<string, Json>;
  const context: Context = { resource: {}, parameters, resourceGroup: "" };
  const own = typeof c.field === "string" ? [String(expression(c.field, context))] : [];
  return [
    ...own,
    ...Object.entries(c)
      .filter(([k]) => k !== "field")
      .flatMap(([, v]) => fieldsNamed(v, parameters)),
  ];
}
