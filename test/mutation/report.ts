// Reading Stryker's JSON reports (mutation-testing-report-schema: 1-based lines and columns) and judging them: each
// module's score, and which survivors equivalent-mutants.json lists — matched by file, mutator, the original code and
// its replacement (whitespace-insensitive), and, for a snippet found more than once, a piece of its source line; never
// by line number, so entries survive edits elsewhere in the file.
import { readFileSync } from "node:fs";
import { relative } from "node:path";

export interface ReportedMutant {
  file: string;
  line: number;
  column: number;
  mutator: string;
  /** The source text the mutant replaces. */
  original: string;
  replacement: string;
  /** The whole source line the mutant starts on. */
  lineText: string;
  status: string;
}

export interface EquivalentMutant {
  file: string;
  mutator: string;
  original: string;
  replacement: string;
  /** Text of the source line the mutant starts on, when the snippet alone is ambiguous (`[]`, `true`). */
  context?: string;
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
        mutator: m.mutatorName,
        original: sliceSource(file.source, m.location.start, m.location.end),
        replacement: m.replacement ?? "",
        lineText: file.source.split("\n")[m.location.start.line - 1] ?? "",
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

/** Code without its whitespace: snippets compare the same however Stryker printed them. */
const squeeze = (code: string): string => code.replace(/\s+/g, "");

function matches(m: ReportedMutant, e: EquivalentMutant): boolean {
  return (
    m.file === e.file &&
    m.mutator === e.mutator &&
    squeeze(m.original) === squeeze(e.original) &&
    squeeze(m.replacement) === squeeze(e.replacement) &&
    (e.context === undefined || squeeze(m.lineText).includes(squeeze(e.context)))
  );
}

/** A survivor: Stryker's "Survived", or "NoCoverage" (no test ran the mutated code at all). */
export function survived(m: ReportedMutant): boolean {
  return m.status === "Survived" || m.status === "NoCoverage";
}

/** Survivors the list names (`listed`), survivors it does not (`unlisted`), and entries naming no survivor (`stale`). */
export function checkEquivalents(
  mutants: readonly ReportedMutant[],
  equivalents: readonly EquivalentMutant[],
): { listed: Set<ReportedMutant>; unlisted: ReportedMutant[]; stale: EquivalentMutant[] } {
  const survivors = mutants.filter(survived);
  const listed = new Set(survivors.filter((m) => equivalents.some((e) => matches(m, e))));
  return {
    listed,
    unlisted: survivors.filter((m) => !listed.has(m)),
    stale: equivalents.filter((e) => !survivors.some((m) => matches(m, e))),
  };
}

export interface ModuleScore {
  module: string;
  /** Mutants that compiled and ran (compile and runtime errors, and ignored ones, aside). */
  valid: number;
  killed: number;
  timeout: number;
  survived: number;
  noCoverage: number;
  /** Survivors listed as equivalent (counted in `survived`/`noCoverage` too). */
  equivalent: number;
  scorePercent: number;
}

/** Stryker's mutation score per module: (killed + timed out) / (killed + timed out + survived + no coverage). */
export function moduleScores(
  mutants: readonly ReportedMutant[],
  modules: readonly string[],
  listed: ReadonlySet<ReportedMutant>,
): ModuleScore[] {
  return modules.map((module) => {
    const own = mutants.filter((m) => m.file === module);
    const count = (status: string): number => own.filter((m) => m.status === status).length;
    const killed = count("Killed");
    const timeout = count("Timeout");
    const survivedCount = count("Survived");
    const noCoverage = count("NoCoverage");
    const valid = killed + timeout + survivedCount + noCoverage;
    return {
      module,
      valid,
      killed,
      timeout,
      survived: survivedCount,
      noCoverage,
      equivalent: own.filter((m) => listed.has(m)).length,
      scorePercent: valid === 0 ? 100 : ((killed + timeout) * 100) / valid,
    };
  });
}
