// The mutation gate's one configuration (`npm run mutate`, run.ts; Node loads it as TypeScript, types stripped). `groups`: the modules that decide, each group with
// the fast unit test files (in-process, no child processes) that run against its mutants. When a module or a test
// moves, change its line here; equivalent-mutants.json names its survivors by this same path.
//
// Groups keep the run short: a mutant of a module's top level (a constant, a Set) is "static" — Stryker reloads and
// runs every test file of the run for it — so each group is its own Stryker run over its own few test files.

import type { PartialStrykerOptions } from "@stryker-mutator/api/core";

export interface MutationGroup {
  readonly name: string;
  /** Source files to mutate, from the repository root. */
  readonly modules: readonly string[];
  /** The unit test files run against them. */
  readonly tests: readonly string[];
}

export const groups: readonly MutationGroup[] = [
  {
    name: "collector",
    modules: ["src/agent/collector/transitions.ts", "src/agent/collector/emitted-keys.ts"],
    tests: ["test/collector/transitions.test.ts", "test/collector/emitted-keys.test.ts"],
  },
  {
    name: "sinks",
    modules: [
      "src/agent/sinks/eventhubs/classify.ts",
      "src/agent/sinks/eventhubs/encode.ts",
      "src/agent/sinks/jsonl/classify.ts",
      "src/agent/sinks/jsonl/encode.ts",
      "src/agent/sinks/loganalytics/classify.ts",
      "src/agent/sinks/loganalytics/encode.ts",
      "src/agent/sinks/stdout/classify.ts",
      "src/agent/sinks/stdout/encode.ts",
      "src/agent/sinks/webhook/classify.ts",
      "src/agent/sinks/webhook/encode.ts",
    ],
    tests: [
      "test/eventhubs/pure.test.ts",
      "test/loganalytics/classify.test.ts",
      "test/webhook/webhook-sink.test.ts",
      "test/sinks/classify-encode.test.ts",
    ],
  },
  {
    // The drainer in its layers: reading batches, applying outcomes, sink health.
    name: "delivery",
    modules: [
      "src/agent/delivery/drainer.ts",
      "src/agent/delivery/batch-reader.ts",
      "src/agent/delivery/apply-outcomes.ts",
      "src/agent/delivery/sink-health.ts",
    ],
    tests: [
      "test/delivery/drainer.test.ts",
      "test/delivery/batch-reader.test.ts",
      "test/delivery/apply-outcomes.test.ts",
      "test/delivery/sink-health.test.ts",
    ],
  },
  {
    // @sef/retry: the one backoff formula, Retry-After read and bounded, the retry loop (the drainer's, the poll's,
    // the fleet's and the Kubernetes action's waits all come from here).
    name: "retry",
    modules: ["src/retry/policy.ts", "src/retry/retry-after.ts", "src/retry/retry.ts"],
    tests: ["test/retry/policy.test.ts", "test/retry/retry.test.ts", "test/loganalytics/classify.test.ts"],
  },
  {
    name: "poll",
    modules: ["src/agent/pipeline/poll-backoff.ts"],
    tests: ["test/agent/poll-backoff.test.ts"],
  },
  {
    name: "approval",
    modules: ["src/agent/actions/approval/policy.ts"],
    tests: ["test/actions/approval-policy.test.ts"],
  },
  {
    // The Kubernetes action's decisions: the plan (taint, timing, waits, which node), the pods a drain evicts, sef's
    // marks on its Node, and which nodes of an event naming several must drain before its one approval.
    name: "kubernetes",
    modules: [
      "src/agent/actions/kubernetes/plan.ts",
      "src/agent/actions/kubernetes/pods.ts",
      "src/agent/actions/kubernetes/marks.ts",
      "src/agent/actions/kubernetes/cluster.ts",
    ],
    tests: [
      "test/actions/kubernetes-plan.test.ts",
      "test/actions/kubernetes-marks.test.ts",
      "test/actions/kubernetes-cluster.test.ts",
      "test/actions/kubernetes-drain-loop.test.ts",
    ],
  },
  {
    // The Kubernetes action's I/O steps tested in-process: one drain (evictions, retries, waits) on the fake clock.
    name: "kubernetes-io",
    modules: ["src/agent/actions/kubernetes/drain.ts"],
    tests: ["test/actions/kubernetes-drain-loop.test.ts"],
  },
  {
    // The Kubernetes action's steps around its Node in-process against the testbed's Kubernetes peer on loopback:
    // the reconciliation with IMDS, and the approval after the node's steps (one node, or the wait for the others).
    name: "kubernetes-steps",
    modules: ["src/agent/actions/kubernetes/reconcile.ts", "src/agent/actions/kubernetes/cluster-approval.ts"],
    tests: ["test/actions/kubernetes-reconcile.test.ts", "test/actions/kubernetes-cluster-approval.test.ts"],
  },
  {
    // The fleet's decisions: rules and the notification plan.
    name: "fleet",
    modules: ["src/fleet/rules.ts", "src/fleet/notification-plan.ts"],
    tests: ["test/fleet/logic.test.ts", "test/fleet/rules-edges.test.ts"],
  },
  {
    name: "config",
    modules: ["src/agent/config/rules.ts"],
    tests: ["test/config/load.test.ts"],
  },
  {
    // Issue 47's agent side: which secrets are redacted (patterns and exact values) and which variables a hook gets.
    name: "trust",
    modules: [
      "src/redaction/secrets.ts",
      "src/agent/config/secret-values.ts",
      "src/agent/actions/hooks/hook-environment.ts",
    ],
    tests: [
      "test/observability/secret-values.test.ts",
      "test/observability/logger.test.ts",
      "test/actions/hook-environment.test.ts",
    ],
  },
  {
    // The store's schema and the ledgers on it: the numbered migrations, the delivery ledger and the outbox over it,
    // the action ledger (its holds).
    name: "ledgers",
    modules: [
      "src/agent/store/migrations.ts",
      "src/agent/delivery/ledger.ts",
      "src/agent/delivery/outbox.ts",
      "src/agent/actions/action-ledger.ts",
    ],
    tests: [
      "test/store/migrations.test.ts",
      "test/store/store.test.ts",
      "test/actions/action-ledger.test.ts",
      "test/actions/ledger-upgrade.test.ts",
    ],
  },
  {
    // The IMDS documents read field by field: the Scheduled Events document (events set apart, duplicate ids), the VM
    // identity and its tags.
    name: "imds-document",
    modules: ["src/agent/imds/document.ts"],
    tests: ["test/imds/document.test.ts"],
  },
  {
    // Configuration loading: the layers (file, SEF_* variables, flags), the schema, every problem named at once.
    name: "config-load",
    modules: ["src/agent/config/load.ts", "src/agent/config/schema.ts"],
    tests: ["test/config/load.test.ts", "test/config/load-edges.test.ts", "test/docs/config-reference.test.ts"],
  },
  {
    // The approver: when an event is approved (StartRequests to IMDS), once, and what it reports. (action.ts, the
    // approval action around it, is tested by action-runner.test.ts, which needs the built tree: not in a sandbox.)
    name: "approver",
    modules: ["src/agent/actions/approval/approver.ts"],
    tests: [
      "test/actions/approver-attempt.test.ts",
      "test/actions/approver.test.ts",
      "test/actions/approver-simulator.test.ts",
    ],
  },
  {
    // The poll stage: one poll against a loopback IMDS peer on a fake clock (what it hands the collect stage, how it
    // counts, logs and backs off), its loop on the monotonic clock, and the VM identity it reads and refreshes.
    name: "poll-stage",
    modules: ["src/agent/pipeline/poll-stage.ts"],
    tests: ["test/agent/poll-stage.test.ts"],
  },
  {
    // The hooks: which hooks a transition runs, their configuration, and each run (real hook processes: stdin, SEF_*
    // variables, exit, timeout, SIGTERM then SIGKILL to the process group) as a Hook record.
    name: "hooks",
    modules: ["src/agent/actions/hooks/hooks.ts"],
    // The configuration reference is generated from the schema: it tells each setting's description apart.
    tests: ["test/actions/hook-runs.test.ts", "test/actions/hooks.test.ts", "test/docs/config-reference.test.ts"],
  },
  {
    // Endpoint discovery's choice: the link-local address first, the remembered endpoint, the sources in order, each
    // candidate trusted once it answers the Scheduled Events API (real loopback peers, and plain recording functions).
    name: "discovery-verify",
    modules: ["src/agent/imds/discovery/resolver.ts", "src/agent/imds/discovery/verify.ts"],
    tests: ["test/imds/discovery/resolver.test.ts", "test/imds/discovery/resolver-order.test.ts"],
  },
  {
    // 2026-12-08 01:32 (15.8 min with its 25 timeouts run again alone): 100 % (283 mutants: 258 killed, 25 timed out
    // twice, 0 survived).
    // The Kubernetes action's worker in-process against the testbed's Kubernetes peer on loopback, the action ledger on
    // an in-memory store and the fake clock: holds and plans, mark, drain start and slot, drain outcomes, undo, failed
    // steps, a moved NotBefore, stop.
    name: "kubernetes-node",
    modules: ["src/agent/actions/kubernetes/node-action.ts"],
    tests: ["test/actions/kubernetes-node-action.test.ts"],
  },
  {
    // 2026-12-08 01:48 (3.8 min): option 245, reg query, networkd and NetworkManager 100 %, dhclient 99.4 % (its one
    // survivor listed: a lease block's ignored first statement).
    // Endpoint discovery's readers: option 245 in its textual forms, `reg query` output, the dhclient, networkd and
    // NetworkManager lease files (each bad input with its own reason and words).
    name: "discovery-parsers",
    modules: [
      "src/agent/imds/discovery/option245.ts",
      "src/agent/imds/discovery/registry-output.ts",
      "src/agent/imds/discovery/lease-dhclient.ts",
      "src/agent/imds/discovery/lease-networkd.ts",
      "src/agent/imds/discovery/lease-networkmanager.ts",
    ],
    tests: ["test/imds/discovery/parsers.test.ts"],
  },
  {
    // 2026-12-08 02:07 (17.1 min with its 37 timeouts run again alone, load 2-6): fleet-event 100 % (73 valid), the
    // partition processor 100 % (261: 241 killed, 20 timed out twice; 17 of the 37 timeouts killed by the second run).
    // The fold of records into fleet events and the partition processor (fold, claim, send, save; bounds and bad
    // input) against an in-memory state store.
    name: "fleet-fold",
    modules: ["src/fleet/fleet-event.ts", "src/fleet/partition-processor.ts"],
    tests: ["test/fleet/processor.test.ts", "test/fleet/fleet-event.test.ts"],
  },
];

/**
 * Groups written for issue 45 item 3 and left out of the gate until a run passes them (test/mutation/README.md says
 * what was measured): run.ts does not read this list; move a group into `groups` with its committed result.
 */
export const pendingGroups: readonly MutationGroup[] = [];

/** A module's mutation score (killed and timed out over all valid mutants) must reach this. */
export const thresholdPercent = 85;

/** Where each group's JSON report goes (run.ts reads them). */
export const reportDir = "node_modules/.cache/sef-mutation";

/** A timed-out mutant's second run, alone (concurrency 1), may take this much longer than its tests did unmutated. */
export const rerunTimeoutMs = 30_000;

const groupName = process.env.SEF_MUTATION_GROUP;
/** The group SEF_MUTATION_GROUP names (run.ts sets it); every group when unset (one long run, by hand). */
export const selectedGroups = groupName ? groups.filter((g) => g.name === groupName) : groups;
if (selectedGroups.length === 0)
  throw new Error(`SEF_MUTATION_GROUP=${groupName}: no such group in test/mutation/stryker.config.ts`);
/**
 * SEF_MUTATION_RERUN (run.ts sets it for the second pass): a JSON list of the timed-out mutants' exact places
 * (`file:line:column-line:column`, Stryker's mutate ranges), run again one at a time with a generous timeout.
 */
const rerunRanges = process.env.SEF_MUTATION_RERUN ? (JSON.parse(process.env.SEF_MUTATION_RERUN) as string[]) : null;

/** Every option but which code is mutated and where the report goes: part of each group's result key (results.ts). */
export const sharedOptions: PartialStrykerOptions = {
  testRunner: "vitest",
  vitest: { configFile: "test/mutation/vitest.config.ts", related: false },
  checkers: ["typescript"],
  tsconfigFile: "test/mutation/tsconfig.group.json", // written by run.ts for the group it runs
  typescriptChecker: { prioritizePerformanceOverAccuracy: true },
  coverageAnalysis: "perTest",
  // Whole runs: run.ts decides which groups run again (results.ts keys each group on everything its tests load);
  // Stryker's incremental file diffs only the mutated files and the test files, not the helpers the tests also run.
  incremental: false,
  // The sandbox copy holds only what the unit tests read (node_modules is linked, not copied).
  ignorePatterns: ["/*", "!/src", "!/test", "!/infra", "!/package.json", "!/tsconfig.json", "/src/*/dist"],
  concurrency: 2,
  reporters: ["progress", "json"],
  tempDirName: ".stryker-tmp",
  cleanTempDir: "always",
  timeoutMS: 10_000,
  // Static mutants (a module-level constant, a Set) run their group's few test files: slow only by Stryker's measure.
  warnings: { unknownOptions: true, preprocessorErrors: true, unserializableOptions: true, slow: false },
};

const options: PartialStrykerOptions = {
  ...sharedOptions,
  mutate: rerunRanges ?? selectedGroups.flatMap((g) => [...g.modules]),
  jsonReporter: { fileName: `${reportDir}/${groupName ?? "all"}${rerunRanges ? ".rerun" : ""}.json` },
  ...(rerunRanges ? { concurrency: 1, timeoutMS: rerunTimeoutMs } : {}),
};

export default options;
