// Reading Stryker's JSON reports (mutation-testing-report-schema: 1-based lines and columns) and judging a group's
// result: each module's score, and which survivors equivalent-mutants.json lists. An entry names one place: its
// context (the mutated lines and as many lines before as after them) found verbatim exactly once in the file.
import { readFileSync } from "node:fs";
import { relative } from "node:path";

export interface ReportedMutant {
  file: string;
  /** 1-based, as Stryker reports them; the end is exclusive. */
  line: number;
  column: number;
  endLine: number;
  endColumn: number;
  mutator: string;
  /** The source text the mutant replaces. */
  original: string;
  replacement: string;
  status: string;
}

export interface EquivalentMutant {
  file: string;
  mutator: string;
  /** The mutated source text, verbatim. */
  original: string;
  /** Stryker's replacement, verbatim. */
  replacement: string;
  /**
   * Whole source lines, verbatim (indentation and all): the lines the mutant spans with as many lines before them as
   * after, at least one each (none on a side only at the file's first or last line). It occurs once in the file.
   */
  context: string;
  /** One line: why no test can tell this mutant from the code. */
  reason: string;
}

interface Position {
  line: number;
  column: number;
}

interface ReportFile {
  source: string;
  mutants: Array<{
    mutatorName: string;
    replacement?: string;
    status: string;
    location: { start: Position; end: Position };
  }>;
}

/** The source text between two 1-based positions (end exclusive). */
export function sliceSource(source: string, start: Position, end: Position): string {
  const lines = source.split("\n");
  const offset = (p: Position): number =>
    lines.slice(0, p.line - 1).reduce((n, l) => n + l.length + 1, 0) + p.column - 1;
  return source.slice(offset(start), offset(end));
}

/** The mutants of one group's report; fails when a module of the group is missing from it. */
export function readReport(path: string, modules: readonly string[]): ReportedMutant[] {
  const report = JSON.parse(readFileSync(path, "utf8")) as { files: Record<string, ReportFile> };
  const mutants: ReportedMutant[] = [];
  const seen = new Set<string>();
  for (const [name, file] of Object.entries(report.files)) {
    const module = name.startsWith("/") ? relative(process.cwd(), name) : name;
    seen.add(module);
    for (const m of file.mutants) {
      mutants.push({
        file: module,
        line: m.location.start.line,
        column: m.location.start.column,
        endLine: m.location.end.line,
        endColumn: m.location.end.column,
        mutator: m.mutatorName,
        original: sliceSource(file.source, m.location.start, m.location.end),
        replacement: m.replacement ?? "",
        status: m.status,
      });
    }
  }
  const missing = modules.filter((m) => !seen.has(m));
  if (missing.length > 0)
    throw new Error(
      `${path}: no mutants reported for ${missing.join(", ")} (moved? update test/mutation/stryker.config.ts)`,
    );
  return mutants;
}

/** Stryker's mutate range for exactly one mutant's place (lines 1-based, columns 0-based: Stryker's own reading). */
export function mutateRange(m: ReportedMutant): string {
  return `${m.file}:${m.line}:${m.column - 1}-${m.endLine}:${m.endColumn - 1}`;
}

/** A survivor: Stryker's "Survived", or "NoCoverage" (no test ran the mutated code at all). */
export function survived(m: { status: string }): boolean {
  return m.status === "Survived" || m.status === "NoCoverage";
}

/** The 1-based line spans (first, last) where `context` occurs in `source` as whole lines. */
export function contextPlaces(source: string, context: string): Array<{ first: number; last: number }> {
  const places: Array<{ first: number; last: number }> = [];
  if (context === "") return places;
  for (let at = source.indexOf(context); at !== -1; at = source.indexOf(context, at + 1)) {
    const end = at + context.length;
    const startsLine = at === 0 || source[at - 1] === "\n";
    const endsLine = end === source.length || source[end] === "\n" || context.endsWith("\n");
    if (!startsLine || !endsLine) continue;
    const first = source.slice(0, at).split("\n").length;
    places.push({ first, last: first + context.replace(/\n$/, "").split("\n").length - 1 });
  }
  return places;
}

/**
 * Whether the place frames exactly the mutant's lines: as many whole lines before them as after, at least one each
 * (none on a side only at the file's first or last line).
 */
export function framedBy(
  m: Pick<ReportedMutant, "line" | "endLine">,
  place: { first: number; last: number },
  lineCount: number,
): boolean {
  const before = m.line - place.first;
  const after = place.last - m.endLine;
  if (before < 0 || after < 0) return false;
  if (before === 0 && after === 0) return false;
  return before === after || (before === 0 && place.first === 1) || (after === 0 && place.last === lineCount);
}

export interface EquivalentsCheck {
  /** Survivors an entry names. */
  listed: Set<ReportedMutant>;
  /** Survivors no entry names. */
  unlisted: ReportedMutant[];
  /** Entries naming no survivor: the mutant is killed now, or its code changed. */
  stale: EquivalentMutant[];
  /** Entries that are wrong whatever survived, each with why. */
  invalid: Array<{ entry: EquivalentMutant; problem: string }>;
}

/**
 * Judges the survivors against the entries. `sourceOf` gives a module's current source; `gatedFiles` every module of
 * every group (an entry for another file is invalid, not merely unused).
 */
export function checkEquivalents(
  mutants: readonly ReportedMutant[],
  equivalents: readonly EquivalentMutant[],
  sourceOf: (file: string) => string,
  gatedFiles: ReadonlySet<string>,
): EquivalentsCheck {
  const survivors = mutants.filter(survived);
  const listed = new Set<ReportedMutant>();
  const stale: EquivalentMutant[] = [];
  const invalid: EquivalentsCheck["invalid"] = [];
  for (const entry of equivalents) {
    if (!gatedFiles.has(entry.file)) {
      invalid.push({ entry, problem: "its file is in no group of stryker.config.ts" });
      continue;
    }
    if (typeof entry.context !== "string" || entry.context.trim() === "") {
      invalid.push({ entry, problem: "it has no context (the mutated lines and one line on each side, verbatim)" });
      continue;
    }
    const source = sourceOf(entry.file);
    const places = contextPlaces(source, entry.context);
    if (places.length > 1) {
      invalid.push({ entry, problem: `its context occurs ${places.length} times in the file: add lines around it` });
      continue;
    }
    const lineCount = source.replace(/\n$/, "").split("\n").length;
    const named = survivors.filter(
      (m) =>
        m.file === entry.file &&
        m.mutator === entry.mutator &&
        m.original === entry.original &&
        m.replacement === entry.replacement &&
        places.length === 1 &&
        framedBy(m, places[0]!, lineCount),
    );
    if (named.length > 1) {
      invalid.push({ entry, problem: `it names ${named.length} survivors: one entry names one mutant` });
      continue;
    }
    if (named.length === 0) stale.push(entry);
    else listed.add(named[0]!);
  }
  return { listed, unlisted: survivors.filter((m) => !listed.has(m)), stale, invalid };
}

export interface ModuleCounts {
  killed: number;
  timeout: number;
  survived: number;
  noCoverage: number;
}

export interface ModuleScore extends ModuleCounts {
  module: string;
  /** Mutants that compiled and ran (compile and runtime errors, and ignored ones, aside). */
  valid: number;
  /** Survivors listed as equivalent (counted in `survived`/`noCoverage` too). */
  equivalent: number;
  scorePercent: number;
}

/** Each module's counts by status (compile errors, runtime errors and ignored mutants left out). */
export function countByModule(
  mutants: readonly ReportedMutant[],
  modules: readonly string[],
): Record<string, ModuleCounts> {
  return Object.fromEntries(
    modules.map((module) => {
      const own = mutants.filter((m) => m.file === module);
      const count = (status: string): number => own.filter((m) => m.status === status).length;
      return [
        module,
        {
          killed: count("Killed"),
          timeout: count("Timeout"),
          survived: count("Survived"),
          noCoverage: count("NoCoverage"),
        },
      ];
    }),
  );
}

/** Stryker's mutation score per module: (killed + timed out) / (killed + timed out + survived + no coverage). */
export function moduleScores(
  counts: Readonly<Record<string, ModuleCounts>>,
  survivors: readonly ReportedMutant[],
  listed: ReadonlySet<ReportedMutant>,
): ModuleScore[] {
  return Object.entries(counts).map(([module, c]) => {
    const valid = c.killed + c.timeout + c.survived + c.noCoverage;
    return {
      module,
      ...c,
      valid,
      equivalent: survivors.filter((m) => m.file === module && listed.has(m)).length,
      scorePercent: valid === 0 ? 100 : ((c.killed + c.timeout) * 100) / valid,
    };
  });
}
