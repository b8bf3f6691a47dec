// What an operator reads about one configuration setting (meaning, unit, default in words), kept in zod's global
// registry beside its schema so the configuration reference is generated from the schema (infra/docs/config-reference.ts);
// and the documented form the millisecond settings share.
import * as z from "zod/mini";

export interface SettingDoc {
  /** What the setting does, for the reference (Markdown, one paragraph). */
  readonly description: string;
  /** Unit of a number when its name does not end in one (`Ms`, `Bytes`, `Hours`, `Seconds`). */
  readonly unit?: string;
  /** The default in words, when it is computed rather than a fixed value. */
  readonly defaultText?: string;
}

/** Registers `doc` for `schema` (the field's outermost schema: its default or optional wrapper) and returns it. */
export function documented<T extends z.ZodMiniType>(schema: T, doc: SettingDoc): T {
  z.globalRegistry.add(schema, { ...doc });
  return schema;
}

/** Whole milliseconds, at least 1 (a period, a deadline, a retry delay). */
export const positiveMs = z.number().check(z.int(), z.positive());
/** Whole milliseconds, 0 allowed (a lead or a reserve that may be none). */
export const nonNegativeMs = z.number().check(z.int(), z.nonnegative());

/** A millisecond setting with its default and its description (`positiveMs` unless another range is given). */
export function msSetting(defaultMs: number, description: string, range: typeof positiveMs = positiveMs) {
  return documented(z._default(range, defaultMs), { description });
}
