// String order by UTF-16 code units, for sorts that only need to be deterministic (event ids, sink names).
// `localeCompare` would do, but its first call loads ICU's collation data into the process: about 2 MB of resident
// memory held for good by an agent that never shows a sorted list to a person (test/bench/README.md, idle RSS).

export function codeUnitOrder(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
