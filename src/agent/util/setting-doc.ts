// What an operator reads about one configuration setting (meaning, unit, default in words), kept in zod's global
// registry beside its schema so the configuration reference is generated from the schema (infra/docs/config-reference.ts).
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
