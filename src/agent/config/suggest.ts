// "Did you mean …?" for unknown setting and variable names: the closest known name by edit distance (fastest-levenshtein).
import { closest, distance } from "fastest-levenshtein";

/** The known name closest to `name` (case-insensitive), or undefined when none is remotely alike. */
export function closestName(name: string, known: readonly string[]): string | undefined {
  if (known.length === 0) return undefined;
  const lowered = known.map((k) => k.toLowerCase());
  const best = closest(name.toLowerCase(), lowered);
  // Names sharing less than about half their letters are not a typo of each other.
  if (distance(name.toLowerCase(), best) > Math.max(2, Math.ceil(best.length / 2))) return undefined;
  return known[lowered.indexOf(best)];
}

/** `unknown setting` plus the suggestion, as one phrase. */
export function unknownNameMessage(what: string, name: string, known: readonly string[]): string {
  const suggestion = closestName(name, known);
  return suggestion === undefined ? `unknown ${what}` : `unknown ${what} (did you mean ${suggestion}?)`;
}
