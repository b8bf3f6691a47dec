// `npm run mutate [group…] [--from-reports]`: the mutation gate. Runs Stryker once per group of stryker.config.ts (each group's mutants
// against its own unit tests), prints each module's score, and fails when a module scores under the threshold, when a
// mutant survives that equivalent-mutants.json does not list, or when that list names a mutant no run let survive.
import { spawn } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { groups, reportDir, thresholdPercent } from "./stryker.config.js";
import { checkEquivalents, moduleScores, readReport, type EquivalentMutant, type ReportedMutant } from "./report.js";

const root = join(import.meta.dirname, "..", "..");
const configPath = "test/mutation/stryker.config.ts";
/** One group's Stryker run may take this long before it is killed (it takes minutes). */
const groupDeadlineMs = 40 * 60_000;

/**
 * The TypeScript checker's project for one group: its modules and what they import, no more (a project of the whole
 * tree made the checker, not the tests, take most of the run). Written next to the config so that Stryker copies it
 * into its sandbox, where the paths lead to the mutated sources.
 */
function writeGroupTsconfig(modules: readonly string[]): void {
  // The ambient declarations (*.d.ts) are in every project: nothing imports them.
  const tsconfig = {
    extends: "../../tsconfig.json",
    include: ["../../src/**/*.d.ts"],
    exclude: ["../../src/*/dist"],
    files: modules.map((m) => `../../${m}`),
  };
  writeFileSync(join(import.meta.dirname, "tsconfig.group.json"), `${JSON.stringify(tsconfig, null, 2)}\n`);
}

function runGroup(name: string): Promise<number | null> {
  return new Promise((resolve) => {
    const child = spawn(join(root, "node_modules/.bin/stryker"), ["run", configPath], {
      cwd: root,
      env: { ...process.env, SEF_MUTATION_GROUP: name },
      stdio: ["ignore", "inherit", "inherit"],
      detached: true, // its own process group: a deadline kills its workers too
    });
    const timer = setTimeout(() => {
      console.error(`mutate: group ${name} ran past ${groupDeadlineMs / 60_000} min; killing it`);
      process.kill(-child.pid!, "SIGKILL");
    }, groupDeadlineMs);
    child.on("error", (err) => console.error(`mutate: cannot start stryker: ${err.message}`));
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}

function pad(text: string | number, width: number): string {
  return String(text).padStart(width);
}

async function main(): Promise<number> {
  // --from-reports: judge the reports of the last run again (after editing equivalent-mutants.json), running nothing.
  const fromReports = process.argv.includes("--from-reports");
  const wanted = process.argv.slice(2).filter((a) => a !== "--from-reports");
  const unknown = wanted.filter((name) => !groups.some((g) => g.name === name));
  if (unknown.length > 0) {
    console.error(`mutate: no group ${unknown.join(", ")} (groups: ${groups.map((g) => g.name).join(", ")})`);
    return 2;
  }
  const selected = wanted.length > 0 ? groups.filter((g) => wanted.includes(g.name)) : groups;
  const startedMs = performance.now();
  const mutants: ReportedMutant[] = [];
  for (const group of selected) {
    const reportPath = join(root, reportDir, `${group.name}.json`);
    if (!fromReports) {
      rmSync(reportPath, { force: true });
      console.log(`\nmutate: group ${group.name} (${group.modules.length} modules, ${group.tests.length} test files)`);
      writeGroupTsconfig(group.modules);
      const code = await runGroup(group.name);
      if (code !== 0) {
        console.error(`mutate: stryker failed for group ${group.name} (exit ${code})`);
        return 1;
      }
    }
    mutants.push(...readReport(reportPath, group.modules));
  }
  const minutes = (performance.now() - startedMs) / 60_000;

  const equivalents = JSON.parse(
    readFileSync(join(import.meta.dirname, "equivalent-mutants.json"), "utf8"),
  ) as EquivalentMutant[];
  const modules = selected.flatMap((g) => g.modules);
  const check = checkEquivalents(
    mutants,
    equivalents.filter((e) => modules.includes(e.file)),
  );
  const scores = moduleScores(mutants, modules, check.listed);

  console.log(
    `\nmutation scores (threshold ${thresholdPercent} %; score = killed and timed out over valid mutants; equivalent survivors count against it):`,
  );
  console.log(
    `${"module".padEnd(44)} ${pad("mutants", 7)} ${pad("killed", 6)} ${pad("timeout", 7)} ${pad("survived", 8)} ${pad("no cov.", 7)} ${pad("equiv.", 6)} ${pad("score", 7)}`,
  );
  let failed = false;
  for (const s of scores) {
    const ok = s.scorePercent >= thresholdPercent;
    failed ||= !ok;
    console.log(
      `${s.module.padEnd(44)} ${pad(s.valid, 7)} ${pad(s.killed, 6)} ${pad(s.timeout, 7)} ${pad(s.survived, 8)} ${pad(s.noCoverage, 7)} ${pad(s.equivalent, 6)} ${pad(s.scorePercent.toFixed(1), 6)}%${ok ? "" : "  < threshold"}`,
    );
  }
  for (const m of check.unlisted) {
    failed = true;
    console.log(
      `survived, not listed as equivalent: ${m.file}:${m.line}:${m.column} ${m.mutator}: ${JSON.stringify(m.original)} → ${JSON.stringify(m.replacement)}`,
    );
  }
  for (const e of check.stale) {
    failed = true;
    console.log(
      `listed as equivalent but no such mutant survived (remove it): ${e.file} ${e.mutator}: ${JSON.stringify(e.original)} → ${JSON.stringify(e.replacement)}`,
    );
  }
  console.log(
    `\nmutate: ${mutants.length} mutants in ${modules.length} modules, ${check.listed.size} equivalent, ${minutes.toFixed(1)} min: ${failed ? "FAILED" : "passed"}`,
  );
  return failed ? 1 : 0;
}

process.exitCode = await main();
