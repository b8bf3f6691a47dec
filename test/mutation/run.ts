// `npm run mutate [group…] [--stale] [--all] [--status] [--judge]`: the mutation gate. Each group of stryker.config.ts has a
// committed result (results/<group>.json) keyed on everything its tests load; a group whose key no longer matches the
// tree is stale and runs again (Stryker over its modules against its unit tests, then each timed-out mutant again alone
// with a generous timeout), the others' results stand. Then every module's score is printed, and the gate fails when a
// module scores under the threshold, a survivor is not listed in equivalent-mutants.json, or an entry there is stale or
// invalid.
import { spawn } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { groups, pendingGroups, reportDir, rerunTimeoutMs, thresholdPercent } from "./stryker.config.js";
import {
  checkEquivalents,
  countByModule,
  moduleScores,
  mutateRange,
  readReport,
  survived,
  type EquivalentMutant,
  type ModuleScore,
  type ReportedMutant,
} from "./report.js";
import {
  changedInputs,
  hashInputs,
  readResult,
  writeResult,
  type GroupDefinition,
  type GroupResult,
  type TimeoutsRerun,
} from "./results.js";

const root = join(import.meta.dirname, "..", "..");
const configPath = "test/mutation/stryker.config.ts";
/** One Stryker run may take this long before it is killed (a group takes minutes). */
const strykerDeadlineMs = 40 * 60_000;

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

function runStryker(name: string, extraEnv: Record<string, string> = {}): Promise<number | null> {
  return new Promise((resolve) => {
    const child = spawn(join(root, "node_modules/.bin/stryker"), ["run", configPath], {
      cwd: root,
      env: { ...process.env, SEF_MUTATION_GROUP: name, ...extraEnv },
      stdio: ["ignore", "inherit", "inherit"],
      detached: true, // its own process group: a deadline kills its workers too
    });
    const timer = setTimeout(() => {
      console.error(`mutate: group ${name} ran past ${strykerDeadlineMs / 60_000} min; killing it`);
      process.kill(-child.pid!, "SIGKILL");
    }, strykerDeadlineMs);
    child.on("error", (err) => console.error(`mutate: cannot start stryker: ${err.message}`));
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}

const samePlace = (a: ReportedMutant, b: ReportedMutant): boolean =>
  a.file === b.file &&
  a.line === b.line &&
  a.column === b.column &&
  a.endLine === b.endLine &&
  a.endColumn === b.endColumn &&
  a.mutator === b.mutator &&
  a.replacement === b.replacement;

/**
 * Runs each timed-out mutant again, alone, with a generous timeout: a test failure or a second timeout kills it, all
 * tests passing makes it a survivor. Returns the mutants with their settled statuses and the tally.
 */
async function settleTimeouts(
  group: GroupDefinition,
  mutants: ReportedMutant[],
): Promise<{ mutants: ReportedMutant[]; tally: TimeoutsRerun } | null> {
  const timedOut = mutants.filter((m) => m.status === "Timeout");
  const tally: TimeoutsRerun = { rerun: timedOut.length, killed: 0, timedOutAgain: 0, survived: 0 };
  if (timedOut.length === 0) return { mutants, tally };
  console.log(
    `\nmutate: group ${group.name}: ${timedOut.length} timed-out mutants run again alone (timeout ${rerunTimeoutMs / 1000} s)`,
  );
  const reportPath = join(root, reportDir, `${group.name}.rerun.json`);
  rmSync(reportPath, { force: true });
  const ranges = [...new Set(timedOut.map(mutateRange))];
  const code = await runStryker(group.name, { SEF_MUTATION_RERUN: JSON.stringify(ranges) });
  if (code !== 0) {
    console.error(`mutate: stryker failed for group ${group.name}'s timed-out mutants (exit ${code})`);
    return null;
  }
  const again = readReport(reportPath, []);
  const settled = mutants.map((m) => {
    if (m.status !== "Timeout") return m;
    const status = again.find((a) => samePlace(a, m))?.status;
    if (status === "Killed") tally.killed += 1;
    else if (status !== undefined && survived({ status })) tally.survived += 1;
    else tally.timedOutAgain += 1; // a second timeout (or no verdict: it stays what the first run said)
    if (status !== "Killed" && status !== undefined && !survived({ status }) && status !== "Timeout")
      console.error(`mutate: ${mutateRange(m)} ${m.mutator}: ${status} on its second run; counted as timed out`);
    return status === "Killed" || (status !== undefined && survived({ status }))
      ? { ...m, status: status === "Killed" ? "Killed" : "Survived" }
      : m;
  });
  return { mutants: settled, tally };
}

/** Runs one group (both passes) and writes its result; null when Stryker fails. */
async function runGroup(group: GroupDefinition): Promise<GroupResult | null> {
  const { key, inputs } = await hashInputs(root, group);
  const startedMs = performance.now();
  const reportPath = join(root, reportDir, `${group.name}.json`);
  rmSync(reportPath, { force: true });
  console.log(`\nmutate: group ${group.name} (${group.modules.length} modules, ${group.tests.length} test files)`);
  writeGroupTsconfig(group.modules);
  const code = await runStryker(group.name);
  if (code !== 0) {
    console.error(`mutate: stryker failed for group ${group.name} (exit ${code})`);
    return null;
  }
  const settled = await settleTimeouts(group, readReport(reportPath, group.modules));
  if (settled === null) return null;
  const result: GroupResult = {
    group: group.name,
    key,
    seconds: Math.round((performance.now() - startedMs) / 1000),
    timeoutsRerun: settled.tally,
    modules: countByModule(settled.mutants, group.modules),
    survivors: settled.mutants.filter(survived),
    inputs,
  };
  writeResult(root, result);
  console.log(`mutate: group ${group.name} took ${result.seconds} s; its result written to test/mutation/results/`);
  return result;
}

interface Plan {
  group: GroupDefinition;
  /** Why it runs again (the files changed since its committed result), or null when its result stands. */
  rerunBecause: string | null;
}

async function plan(selected: readonly GroupDefinition[], force: boolean): Promise<Plan[]> {
  const plans: Plan[] = [];
  for (const group of selected) {
    const committed = readResult(root, group.name);
    const { key, inputs } = await hashInputs(root, group);
    let because: string | null = null;
    if (force) because = "asked for";
    else if (committed === undefined) because = "no committed result";
    else if (committed.key !== key) {
      const changed = changedInputs(committed.inputs, inputs);
      because =
        changed.length > 0
          ? `changed: ${changed.slice(0, 8).join(", ")}${changed.length > 8 ? ` and ${changed.length - 8} more` : ""}`
          : "its definition or the tools' versions changed";
    }
    plans.push({ group, rerunBecause: because });
  }
  return plans;
}

function pad(text: string | number, width: number): string {
  return String(text).padStart(width);
}

function printScores(scores: readonly ModuleScore[]): boolean {
  console.log(
    `\nmutation scores (threshold ${thresholdPercent} %; score = killed and timed out over valid mutants; equivalent survivors count against it):`,
  );
  console.log(
    `${"module".padEnd(48)} ${pad("mutants", 7)} ${pad("killed", 6)} ${pad("timeout", 7)} ${pad("survived", 8)} ${pad("no cov.", 7)} ${pad("equiv.", 6)} ${pad("score", 7)}`,
  );
  let failed = false;
  for (const s of scores) {
    const ok = s.scorePercent >= thresholdPercent;
    failed ||= !ok;
    console.log(
      `${s.module.padEnd(48)} ${pad(s.valid, 7)} ${pad(s.killed, 6)} ${pad(s.timeout, 7)} ${pad(s.survived, 8)} ${pad(s.noCoverage, 7)} ${pad(s.equivalent, 6)} ${pad(s.scorePercent.toFixed(1), 6)}%${ok ? "" : "  < threshold"}`,
    );
  }
  return failed;
}

/** Judges the groups' results against the threshold and the equivalents list; true when the gate fails. */
function judge(results: readonly GroupResult[]): boolean {
  const equivalents = JSON.parse(
    readFileSync(join(import.meta.dirname, "equivalent-mutants.json"), "utf8"),
  ) as EquivalentMutant[];
  const gated = new Set(groups.flatMap((g) => g.modules));
  // A pending group's entries wait, unjudged, for the run that moves it into the gate.
  const pending = new Set(pendingGroups.flatMap((g) => g.modules).filter((file) => !gated.has(file)));
  const judged = new Set(results.flatMap((r) => Object.keys(r.modules)));
  const survivors = results.flatMap((r) => r.survivors);
  const check = checkEquivalents(
    survivors,
    equivalents.filter((e) => !pending.has(e.file) && (judged.has(e.file) || !gated.has(e.file))),
    (file) => readFileSync(join(root, file), "utf8"),
    gated,
  );
  const counts = Object.assign({}, ...results.map((r) => r.modules)) as GroupResult["modules"];
  let failed = printScores(moduleScores(counts, survivors, check.listed));
  const place = (m: ReportedMutant) => `${m.file}:${m.line}:${m.column} ${m.mutator}`;
  const entry = (e: EquivalentMutant) => `${e.file} ${e.mutator}: ${JSON.stringify(e.original)}`;
  for (const m of check.unlisted) {
    failed = true;
    console.log(
      `survived, not listed as equivalent: ${place(m)}: ${JSON.stringify(m.original)} → ${JSON.stringify(m.replacement)}`,
    );
  }
  for (const e of check.stale) {
    failed = true;
    console.log(`listed as equivalent but no such mutant survived there (remove it): ${entry(e)}`);
  }
  for (const { entry: e, problem } of check.invalid) {
    failed = true;
    console.log(`invalid entry in equivalent-mutants.json: ${entry(e)}: ${problem}`);
  }
  const total = results.reduce((n, r) => n + Object.values(r.modules).reduce((k, c) => k + c.killed + c.timeout, 0), 0);
  const t = results.reduce(
    (sum, r) => ({
      rerun: sum.rerun + r.timeoutsRerun.rerun,
      killed: sum.killed + r.timeoutsRerun.killed,
      timedOutAgain: sum.timedOutAgain + r.timeoutsRerun.timedOutAgain,
      survived: sum.survived + r.timeoutsRerun.survived,
    }),
    { rerun: 0, killed: 0, timedOutAgain: 0, survived: 0 },
  );
  console.log(
    `\nmutate: ${total} mutants killed or timed out in ${judged.size} modules, ${check.listed.size} survivors listed as equivalent; ` +
      `${t.rerun} timed-out mutants settled by a second run alone: ${t.killed} killed, ${t.timedOutAgain} timed out again, ${t.survived} survived`,
  );
  return failed;
}

async function main(): Promise<number> {
  const flags = new Set(process.argv.slice(2).filter((a) => a.startsWith("--")));
  const wanted = process.argv.slice(2).filter((a) => !a.startsWith("--"));
  const unknown = [
    ...wanted.filter((name) => !groups.some((g) => g.name === name)),
    ...[...flags].filter((f) => !["--stale", "--all", "--status", "--judge"].includes(f)),
  ];
  if (unknown.length > 0) {
    console.error(
      `mutate: no group or option ${unknown.join(", ")} (groups: ${groups.map((g) => g.name).join(", ")}; options: --stale, --all, --status, --judge)`,
    );
    return 2;
  }
  const selected = wanted.length > 0 ? groups.filter((g) => wanted.includes(g.name)) : groups;
  const plans = await plan(selected, flags.has("--all") || wanted.length > 0);
  console.log("mutate: each group's committed result stands unless a file its tests load changed");
  for (const p of plans)
    console.log(`  ${p.group.name.padEnd(14)} ${p.rerunBecause === null ? "reused" : `RERUN (${p.rerunBecause})`}`);
  if (flags.has("--status")) return plans.some((p) => p.rerunBecause !== null) ? 1 : 0;
  if (flags.has("--judge")) {
    // The committed results that still stand, judged against today's list and threshold; nothing runs.
    const standing = plans.filter((p) => p.rerunBecause === null).map((p) => readResult(root, p.group.name)!);
    return judge(standing) ? 1 : 0;
  }

  const startedMs = performance.now();
  const results: GroupResult[] = [];
  for (const p of plans) {
    const result = p.rerunBecause === null ? readResult(root, p.group.name) : await runGroup(p.group);
    if (!result) return 1;
    results.push(result);
  }
  const ran = plans.filter((p) => p.rerunBecause !== null).map((p) => p.group.name);
  const failed = judge(results);
  console.log(
    `mutate: ran ${ran.length > 0 ? ran.join(", ") : "no group"} in ${((performance.now() - startedMs) / 60_000).toFixed(1)} min, ` +
      `reused ${plans.length - ran.length}: ${failed ? "FAILED" : "passed"}`,
  );
  return failed ? 1 : 0;
}

process.exitCode = await main();
