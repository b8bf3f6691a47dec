// Dictionaries keyed by strings that come from records (EventIds, AgentIds, VM names): objects without a prototype, so
// no key — `__proto__`, `constructor`, `toString` — reads or replaces anything of Object.prototype.

/** A string-keyed dictionary with no prototype. */
export type SafeDict<T> = Record<string, T>;

/** An empty dictionary with no prototype (`__proto__` is an ordinary key in it). */
export function emptyDict<T>(): SafeDict<T> {
  return Object.create(null) as SafeDict<T>;
}

/** A prototype-free copy of `source`'s own entries (each value passed through `value`), e.g. a dictionary read as JSON. */
export function dictOf<T>(source: unknown, value: (v: unknown) => T = (v) => v as T): SafeDict<T> {
  const dict = emptyDict<T>();
  if (typeof source !== "object" || source === null || Array.isArray(source)) return dict;
  for (const [key, v] of Object.entries(source)) dict[key] = value(v);
  return dict;
}

/** `dict[key]` when `key` is the dictionary's own, else undefined (never an inherited member). */
export function own<T>(dict: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.hasOwn(dict, key) ? dict[key] : undefined;
}
