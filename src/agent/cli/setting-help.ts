// What `--help` says of a setting — its default, its allowed values, its range — read from the configuration schema
// (config/schema.ts), never typed by hand, so the help and the configuration reference (generated from the same
// schema) cannot disagree.
import * as z from "zod/mini";
import { agentConfigSchema } from "../config/schema.js";
import type { SettingDoc } from "../util/setting-doc.js";

type Schema = z.core.$ZodType;

/** The schema inside a default or optional wrapper. */
function unwrap(schema: Schema): Schema {
  let inner = schema;
  while (inner._zod.def.type === "default" || inner._zod.def.type === "optional")
    inner = (inner._zod.def as unknown as { innerType: Schema }).innerType;
  return inner;
}

/** The schema of the setting at `path` (`pollIntervalMs`, `metrics.port`, `eventhubs.credential`): its outermost wrapper. */
export function settingSchema(path: string): Schema {
  let schema: Schema = agentConfigSchema;
  for (const key of path.split(".")) {
    const shape = (unwrap(schema)._zod.def as unknown as { shape?: Record<string, Schema> }).shape;
    const next = shape?.[key];
    if (next === undefined) throw new Error(`the configuration schema has no setting ${path}`);
    schema = next;
  }
  return schema;
}

/**
 * The default as help shows it: the documented words when the default is computed (without Markdown or parentheses:
 * `discovered`), else the value (a list comma-separated, as `SEF_SINKS` takes it); undefined when there is none.
 */
export function settingDefault(path: string): string | undefined {
  const schema = settingSchema(path);
  const doc = z.globalRegistry.get(schema) as SettingDoc | undefined;
  if (doc?.defaultText !== undefined) return doc.defaultText.replace(/`/g, "").replace(/^\((.*)\)$/, "$1");
  if (schema._zod.def.type !== "default") return undefined;
  const value = (schema._zod.def as unknown as { defaultValue: unknown }).defaultValue;
  return Array.isArray(value) ? value.join(",") : String(value);
}

/** The values an enum setting allows, in the schema's order. */
export function settingChoices(path: string): string[] {
  const inner = unwrap(settingSchema(path));
  if (inner._zod.def.type !== "enum") throw new Error(`setting ${path} is not a list of names`);
  return Object.values((inner._zod.def as unknown as { entries: Record<string, string> }).entries);
}

/** The least value a number setting allows. */
export function settingMinimum(path: string): number {
  const { minimum } = z.toJSONSchema(unwrap(settingSchema(path))) as { minimum?: unknown };
  if (typeof minimum !== "number") throw new Error(`setting ${path} has no minimum`);
  return minimum;
}

/** `text (default: …)` for the setting at `path` (just `text` when it has no default). */
export function withDefault(text: string, path: string): string {
  const value = settingDefault(path);
  return value === undefined ? text : `${text} (default: ${value})`;
}
