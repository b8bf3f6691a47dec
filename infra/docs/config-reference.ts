// Generates the agent's configuration reference from its zod schema (src/agent/config/schema.ts, with the sink, discovery,
// action and server sections it assembles): every key with its type, default, unit, flag and environment variable,
// written into each Markdown file between `<!-- config-reference:begin SECTION -->` and `<!-- config-reference:end -->`.
// Run: npx tsx infra/docs/config-reference.ts (rewrites the files); test/docs/config-reference.test.ts checks them.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, posix, relative } from "node:path";
import { fileURLToPath } from "node:url";
import * as z from "zod/mini";
import { agentConfigSchema } from "../../src/agent/config/schema.js";
import { configFlags, environmentVariables } from "../../src/agent/config/load.js";
import { markdownFiles, wrapParagraph } from "./markdown.js";

export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** One setting as the reference shows it. */
export interface SettingEntry {
  readonly path: string;
  readonly type: string;
  readonly defaultText: string | undefined;
  /** Must be given (in its section, when the section is given). */
  readonly required: boolean;
  readonly unit: string | undefined;
  readonly flag: string | undefined;
  readonly variable: string | undefined;
  readonly description: string;
}

interface JsonSchema {
  type?: string | string[];
  description?: string;
  default?: unknown;
  unit?: string;
  defaultText?: string;
  properties?: Record<string, JsonSchema>;
  items?: JsonSchema;
  additionalProperties?: JsonSchema | boolean;
  anyOf?: JsonSchema[];
  enum?: unknown[];
  format?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  minItems?: number;
  required?: string[];
}

const unitSuffixes: [RegExp, string][] = [
  [/Ms$/, "ms"],
  [/Bytes$/, "bytes"],
  [/Hours$/, "hours"],
  [/Seconds(Exclusive)?$/, "seconds"],
];

/** Every setting of the agent's configuration, depth first in schema order. */
export function settingEntries(): SettingEntry[] {
  const schema = z.toJSONSchema(agentConfigSchema, { io: "input", unrepresentable: "any" }) as JsonSchema;
  const variables = new Map(Object.entries(environmentVariables).map(([name, { field }]) => [field, name]));
  const entries: SettingEntry[] = [];
  const visit = (node: JsonSchema, path: string, key: string, required: boolean): void => {
    const unit = node.unit ?? unitSuffixes.find(([suffix]) => suffix.test(key))?.[1];
    const isObject = node.type === "object" && node.properties !== undefined;
    entries.push({
      path,
      type: describeType(node),
      defaultText:
        node.defaultText ??
        (node.default === undefined || isObject ? undefined : `\`${JSON.stringify(node.default)}\``),
      required,
      unit: isNumber(node) ? unit : undefined,
      flag: path.includes(".") ? undefined : configFlags[path]?.flag,
      variable: path.includes(".") ? undefined : variables.get(path),
      description: node.description ?? "",
    });
    const parent = isObject ? node : node.type === "array" && node.items?.properties ? node.items : undefined;
    const prefix = isObject ? `${path}.` : `${path}[].`;
    for (const [name, child] of Object.entries(parent?.properties ?? {}))
      visit(child, prefix + name, name, parent?.required?.includes(name) ?? false);
  };
  for (const [name, child] of Object.entries(schema.properties ?? {}))
    visit(child, name, name, schema.required?.includes(name) ?? false);
  return entries;
}

function isNumber(node: JsonSchema): boolean {
  return node.type === "integer" || node.type === "number";
}

function describeType(node: JsonSchema): string {
  if (node.anyOf) return node.anyOf.map(describeType).join(" or ");
  if (node.enum) return `one of ${node.enum.map((v) => `\`${String(v)}\``).join(", ")}`;
  if (isNumber(node)) return `${node.type as string}${describeRange(node)}`;
  if (node.type === "string") return node.format === "uri" ? "URL" : node.format === "ipv4" ? "IPv4 address" : "string";
  if (node.type === "array" && node.items?.enum)
    return `list of ${node.items.enum.map((v) => `\`${String(v)}\``).join(", ")}`;
  if (node.type === "array") return `list of ${plural(node.items ? describeType(node.items) : "values")}`;
  if (node.type === "object" && node.properties) return "object";
  if (node.type === "object" && typeof node.additionalProperties === "object") {
    return `object {name: ${describeType(node.additionalProperties)}}`;
  }
  return String(node.type ?? "any");
}

function describeRange(node: JsonSchema): string {
  const max = node.maximum !== undefined && node.maximum < Number.MAX_SAFE_INTEGER ? node.maximum : undefined;
  const min = node.minimum !== undefined && node.minimum > Number.MIN_SAFE_INTEGER ? node.minimum : undefined;
  if (min !== undefined && max !== undefined) return ` ${min}–${max}`;
  if (min !== undefined) return ` ≥ ${min}`;
  if (node.exclusiveMinimum !== undefined) return ` > ${node.exclusiveMinimum}`;
  if (max !== undefined) return ` ≤ ${max}`;
  return "";
}

function plural(type: string): string {
  if (type === "string") return "strings";
  if (type === "object") return "objects";
  if (type === "URL") return "URLs";
  return type;
}

/** One list item per setting under `section` (a top-level key, or `core` for the top-level scalar settings). */
export function renderSection(section: string, entries: readonly SettingEntry[], fromFile: string): string {
  const chosen = entries.filter((e) =>
    section === "core"
      ? !e.path.includes(".") && !e.path.includes("[]")
      : e.path === section || e.path.startsWith(`${section}.`) || e.path.startsWith(`${section}[].`),
  );
  if (chosen.length === 0) throw new Error(`config reference: no setting under "${section}"`);
  return chosen.flatMap((entry) => renderEntry(entry, fromFile)).join("\n");
}

function renderEntry(entry: SettingEntry, fromFile: string): string[] {
  const facts = [
    entry.type,
    entry.unit,
    entry.required ? "required" : undefined,
    entry.defaultText === undefined ? undefined : `default ${entry.defaultText}`,
  ]
    .filter((f) => f !== undefined)
    .join(", ");
  const sources = [entry.flag, entry.variable].filter((s) => s !== undefined).map((s) => `\`${s}\``);
  const head = `\`${entry.path}\` — ${facts}${sources.length > 0 ? `; ${sources.join(", ")}` : ""}.`;
  return wrapParagraph(`${head} ${linkPaths(entry.description, fromFile)}`, "- ", "  ");
}

/** Turns repository paths of Markdown files (`src/x/README.md`) into links relative to `fromFile`. */
function linkPaths(text: string, fromFile: string): string {
  return text.replace(
    /\b((?:src|infra|bicep|test)\/[\w./-]*\.md)\b/g,
    (path) => `[${path}](${posix.relative(posix.dirname(fromFile), path)})`,
  );
}

const beginMarker = /<!-- config-reference:begin ([\w.]+) -->\n[\s\S]*?<!-- config-reference:end -->/g;

/** `markdown` with every marked section regenerated; `file` is its path from the repository root. */
export function regenerate(
  markdown: string,
  file: string,
  entries: readonly SettingEntry[] = settingEntries(),
): string {
  return markdown.replace(beginMarker, (_all, section: string) => {
    const body = renderSection(section, entries, file);
    return `<!-- config-reference:begin ${section} -->\n${body}\n<!-- config-reference:end -->`;
  });
}

/** The repository's Markdown files that hold a generated section. */
export function filesWithReference(root = repoRoot): string[] {
  return markdownFiles(root).filter(
    (file) =>
      existsSync(join(root, file)) && readFileSync(join(root, file), "utf8").includes("<!-- config-reference:begin "),
  );
}

function main(): void {
  const entries = settingEntries();
  for (const file of filesWithReference()) {
    const path = join(repoRoot, file);
    const before = readFileSync(path, "utf8");
    const after = regenerate(before, file, entries);
    if (after !== before) {
      writeFileSync(path, after);
      console.log(`config reference: wrote ${relative(repoRoot, path)}`);
    }
  }
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) main();
