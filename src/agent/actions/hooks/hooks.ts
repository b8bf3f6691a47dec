// Hooks: operator commands run on event transitions (argv arrays, never a shell), with the record on stdin and as
// SEF_* variables over an allowlisted environment (no sef secret); each run becomes a HookRecord (Succeeded, Failed,
// TimedOut or Interrupted). Config section `hooks`.
import { spawn, type ChildProcessByStdio } from "node:child_process";
import type { Readable, Writable } from "node:stream";
import * as z from "zod/mini";
import "../../util/zod-locale.js";
import { documented } from "../../util/setting-doc.js";
import type { Logger } from "pino";
import { buildRecord, type HookRecord, type RecordIdMaker, type TransitionRecord } from "@sef/contract/record.js";
import { deterministicUuid } from "@sef/contract/record-id.js";
import { agentVersion as packageVersion } from "../../agent-version.js";
import type { AgentMetrics } from "../../observability/metrics.js";
import { redactSecrets } from "../../observability/logger.js";
import { systemClock, type Clock } from "@sef/runtime/clock.js";
import { hookBaseEnvironment } from "./hook-environment.js";

export const defaultHookTimeoutMs = 60_000;
export const defaultHookKillGraceMs = 5_000;
const stderrTailBytes = 4096;
const stderrTailLines = 5;
const maxDetailChars = 1000;
const exitToCloseGraceMs = 1000;

export const hookInterruptedPolicies = ["skip", "rerun"] as const;

export const hookSchema = z.strictObject({
  name: documented(z.string().check(z.minLength(1)), {
    description: "Unique name: appears in records, logs and the RecordId.",
  }),
  on: documented(z.array(z.enum(["Scheduled", "Started", "Completed", "Canceled"])).check(z.minLength(1)), {
    description: "Statuses that trigger the hook: `Scheduled`, `Started`, `Completed`, `Canceled`.",
  }),
  command: documented(
    z.array(z.string()).check(
      z.minLength(1),
      z.refine((argv) => argv[0] !== "", { message: "command[0] must name an executable" }),
    ),
    { description: 'Executable and arguments (`["/path/exe", "arg"]`), run without a shell.' },
  ),
  timeoutMs: documented(z._default(z.number().check(z.int(), z.positive()), defaultHookTimeoutMs), {
    description: "Run time limit; then the hook's process group gets SIGTERM, then SIGKILL after `killGraceMs`.",
  }),
  killGraceMs: documented(z._default(z.number().check(z.int(), z.nonnegative()), defaultHookKillGraceMs), {
    description: "Time between SIGTERM and SIGKILL.",
  }),
  eventTypes: documented(z.optional(z.array(z.string().check(z.minLength(1))).check(z.minLength(1))), {
    description: "Only these EventTypes (case-insensitive); all when absent.",
  }),
  affectsThisVmOnly: documented(z._default(z.boolean(), true), {
    description: "Only events whose `Resources` include this VM.",
  }),
  passEnvironment: documented(z._default(z.array(z.string().check(z.regex(/^[A-Za-z_][A-Za-z0-9_]*$/))), []), {
    description:
      "Names of the agent's environment variables the hook gets besides the allowlisted ones (`PATH`, `HOME`, `LANG`, `TZ`, …: see src/agent/actions/README.md); values stay redacted in records and logs.",
  }),
  onInterrupted: documented(z._default(z.enum(hookInterruptedPolicies), "skip"), {
    description:
      "A run cut off by a crash, `kill -9` or a shutdown: `skip` reports it `Interrupted` and leaves it; `rerun` also runs it again (at most 3 runs in all).",
  }),
});
export type HookConfig = z.infer<typeof hookSchema>;

export const hooksConfigSchema = z._default(z.array(hookSchema), []).check(
  z.refine((hooks) => new Set(hooks.map((h) => h.name)).size === hooks.length, {
    message: "hook names must be unique",
  }),
);
export type HooksConfig = z.infer<typeof hooksConfigSchema>;

/** The hooks to run for a transition record, in configuration order. */
export function selectHooks(hooks: readonly HookConfig[], record: TransitionRecord): HookConfig[] {
  return hooks.filter(
    (hook) =>
      hook.on.includes(record.EventStatus) &&
      (!hook.eventTypes || hook.eventTypes.some((t) => t.toLowerCase() === record.EventType.toLowerCase())) &&
      (!hook.affectsThisVmOnly || record.AffectsThisVm),
  );
}

/** RecordId of a hook run: deterministic from (`recordSource`: AgentId and VmId, lower-cased EventId, EventStatus, "Hook", hook name). */
export function hookRecordId(vmId: string, eventId: string, eventStatus: string, hookName: string): string {
  return deterministicUuid(vmId, eventId.toLowerCase(), eventStatus, "Hook", hookName);
}

/** RecordId of the report that run number `attempt` of a hook was interrupted (one per interruption). */
export function interruptedHookRecordId(
  vmId: string,
  eventId: string,
  eventStatus: string,
  hookName: string,
  attempt: number,
): string {
  return deterministicUuid(vmId, eventId.toLowerCase(), eventStatus, "Hook", hookName, "Interrupted", String(attempt));
}

/** The SEF_* variables a hook gets (values are plain strings; never interpreted by a shell). */
export function hookEnvironment(record: TransitionRecord, hookName: string): Record<string, string> {
  return {
    SEF_HOOK_NAME: hookName,
    SEF_RECORD_ID: record.RecordId,
    SEF_EVENT_ID: record.EventId,
    SEF_EVENT_STATUS: record.EventStatus,
    SEF_PREVIOUS_STATUS: record.PreviousStatus,
    SEF_EVENT_TYPE: record.EventType,
    SEF_EVENT_SOURCE: record.EventSource,
    SEF_RESOURCE_TYPE: record.ResourceType,
    SEF_RESOURCES: record.Resources.join(","),
    SEF_NOT_BEFORE: record.NotBefore ?? "",
    SEF_DESCRIPTION: record.Description,
    SEF_DURATION_IN_SECONDS: String(record.DurationInSeconds),
    SEF_DOCUMENT_INCARNATION: String(record.DocumentIncarnation),
    SEF_AFFECTS_THIS_VM: String(record.AffectsThisVm),
    SEF_OBSERVATION_GAP: String(record.ObservationGap),
    SEF_TIME_GENERATED: record.TimeGenerated,
    SEF_VM_NAME: record.VmName,
    SEF_VM_ID: record.VmId,
    SEF_VM_RESOURCE_ID: record.VmResourceId,
  };
}

export interface RunHookOptions {
  logger: Logger;
  clock?: Clock;
  /**
   * The environment the child's is taken from (default: this process's): only the allowlisted variables and the
   * hook's `passEnvironment` pass; SEF_* variables are added on top.
   */
  env?: NodeJS.ProcessEnv;
  metrics?: AgentMetrics;
  /** Aborting kills the hook like a timeout does (used at shutdown). */
  signal?: AbortSignal;
  agentVersion?: string;
  /**
   * Whose process handling applies (default: this process's platform): off Windows the hook runs in a process group
   * of its own, signalled as a whole; on Windows the hook's process alone.
   */
  platform?: NodeJS.Platform;
}

interface ChildEnd {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  spawnError?: Error;
}

/**
 * Runs one hook for one transition record: `spawn(argv[0], argv.slice(1), { shell: false })`, record JSON on stdin,
 * SEF_* variables in the environment. Past `timeoutMs` the process (group) gets SIGTERM, then SIGKILL after
 * `killGraceMs`. Never throws: a command that cannot start is a `Failed` record with ExitCode -1.
 */
export async function runHook(
  hook: HookConfig,
  record: TransitionRecord,
  options: RunHookOptions,
): Promise<HookRecord> {
  const clock = options.clock ?? systemClock;
  const startedMs = clock.monotonicMs();
  const hookProcess = startHookProcess(hook, record, options.env ?? process.env, options.platform ?? process.platform);
  const { end, killedBy } =
    "spawnError" in hookProcess
      ? { end: { exitCode: null, signal: null, spawnError: hookProcess.spawnError }, killedBy: undefined }
      : await superviseHookProcess(hookProcess, hook, clock, options.signal);
  const elapsedMs = clock.monotonicMs() - startedMs;

  const { outcome, why } = hookOutcome(end, killedBy, hook);
  const exitCode = end.exitCode ?? -1;
  const stderrTail = "spawnError" in hookProcess ? "" : hookProcess.stderrTail().toString("utf8");
  const stderrText = redactSecrets(lastLines(stderrTail, stderrTailLines));
  const detail = truncate(`${hook.name}: ${why}${stderrText ? `; stderr: ${stderrText}` : ""}`, maxDetailChars);

  options.metrics?.hooks.inc({ outcome: metricOutcome[outcome] });
  const log = {
    hook: hook.name,
    eventId: record.EventId,
    eventStatus: record.EventStatus,
    outcome,
    exitCode,
    elapsedMs,
  };
  if (outcome === "Succeeded") options.logger.info(log, "hook finished");
  else options.logger.warn({ ...log, detail }, "hook did not succeed");

  return hookRecord(record, {
    recordId: (source) => hookRecordId(source, record.EventId, record.EventStatus, hook.name),
    nowMs: clock.now(),
    outcome,
    exitCode,
    elapsedMs,
    detail,
    agentVersion: options.agentVersion ?? packageVersion,
  });
}

/** A started hook process: the child, how to signal it (its process group off Windows), and the tail of its stderr. */
interface HookProcess {
  readonly child: ChildProcessByStdio<Writable, null, Readable>;
  kill(sig: NodeJS.Signals): void;
  stderrTail(): Buffer;
}

/**
 * Spawns the hook (no shell, its own process group off Windows), writes the record to its stdin, keeps its stderr's
 * tail. A command or variable the system cannot pass (a NUL character from an IMDS string) is a `spawnError`, not a throw.
 */
function startHookProcess(
  hook: HookConfig,
  record: TransitionRecord,
  baseEnv: NodeJS.ProcessEnv,
  platform: NodeJS.Platform,
): HookProcess | { spawnError: Error } {
  const [executable, ...args] = hook.command as [string, ...string[]];
  const env = { ...hookBaseEnvironment(baseEnv, hook.passEnvironment), ...hookEnvironment(record, hook.name) };
  const argv = hook.command.map((arg, i) => [`command[${i}]`, arg] as const);
  const unpassable = unpassableStrings([...argv, ...Object.entries(env)]);
  if (unpassable !== undefined) return { spawnError: new Error(unpassable) };
  const ownGroup = platform !== "win32";
  let child: HookProcess["child"];
  try {
    child = spawn(executable, args, {
      shell: false,
      stdio: ["pipe", "ignore", "pipe"],
      env,
      detached: ownGroup, // own process group, so a timeout also stops the hook's children
      windowsHide: true,
    });
  } catch (err) {
    return { spawnError: err as Error };
  }

  let stderrTail = Buffer.alloc(0);
  child.stderr.on("data", (chunk: Buffer) => {
    stderrTail = Buffer.concat([stderrTail, chunk]).subarray(-stderrTailBytes);
  });
  child.stdin.on("error", () => undefined); // the hook may exit without reading stdin (EPIPE)
  child.stdin.end(JSON.stringify(record) + "\n");

  // Signalled only once the process started (a spawn that fails ends with 'error' first; a missing pid throws below).
  const pid = child.pid as number;
  const kill = (sig: NodeJS.Signals): void => {
    try {
      if (ownGroup) process.kill(-pid, sig);
      else child.kill(sig);
    } catch {
      // already gone
    }
  };
  return { child, kill, stderrTail: () => stderrTail };
}

/**
 * Waits for the hook to end; past `timeoutMs` (or on the caller's abort) it gets SIGTERM, then SIGKILL after
 * `killGraceMs`. Says how it ended and whether it was killed, and why.
 */
async function superviseHookProcess(
  hookProcess: HookProcess,
  hook: HookConfig,
  clock: Clock,
  signal: AbortSignal | undefined,
): Promise<{ end: ChildEnd; killedBy: "timeout" | "abort" | undefined }> {
  const { child, kill } = hookProcess;
  const childEnded = new AbortController();
  // 'close' waits for stdio too; if a background child of the hook keeps stderr open, settle shortly after 'exit'.
  const ended = new Promise<ChildEnd>((resolve) => {
    child.once("error", (err) => resolve({ exitCode: null, signal: null, spawnError: err }));
    child.once("close", (exitCode, exitSignal) => resolve({ exitCode, signal: exitSignal }));
    child.once("exit", (exitCode, exitSignal) => {
      clock.sleep(exitToCloseGraceMs, childEnded.signal).then(
        () => resolve({ exitCode, signal: exitSignal }),
        () => undefined,
      );
    });
  });

  // Timeout (or the caller's abort) → SIGTERM to the process group; after killGraceMs → SIGKILL.
  let killedBy: "timeout" | "abort" | undefined;
  const watchdog = (async () => {
    const stop = signal ? AbortSignal.any([childEnded.signal, signal]) : childEnded.signal;
    try {
      await clock.sleep(hook.timeoutMs, stop);
      killedBy = "timeout";
    } catch {
      if (childEnded.signal.aborted) return;
      killedBy = "abort";
    }
    kill("SIGTERM");
    try {
      await clock.sleep(hook.killGraceMs, childEnded.signal);
      kill("SIGKILL");
    } catch {
      // ended within the grace period
    }
  })();

  const end = await ended;
  childEnded.abort();
  await watchdog;
  return { end, killedBy };
}

/** How a hook run ended, as a record's Outcome and the words for its Detail (pure). */
function hookOutcome(
  end: ChildEnd,
  killedBy: "timeout" | "abort" | undefined,
  hook: HookConfig,
): { outcome: HookRecord["Outcome"]; why: string } {
  if (end.spawnError)
    return { outcome: "Failed", why: `cannot start ${hook.command[0]}: ${spawnFailureText(end.spawnError)}` };
  if (killedBy === "timeout") return { outcome: "TimedOut", why: `timed out after ${hook.timeoutMs} ms` };
  if (killedBy === "abort") return { outcome: "Interrupted", why: "interrupted: the agent stopped while it ran" };
  if (end.exitCode === 0) return { outcome: "Succeeded", why: "exit 0" };
  return {
    outcome: "Failed",
    why: end.exitCode !== null ? `exit ${end.exitCode}` : `killed by ${end.signal}`,
  };
}

/**
 * The report that a hook run was cut off (the agent died or stopped while it ran): Outcome Interrupted, ExitCode -1.
 * `attempt` numbers the run, so each interruption is one record.
 */
export function interruptedHookRecord(
  hookName: string,
  record: TransitionRecord,
  attempt: number,
  detail: string,
  nowMs: number,
  agentVersion: string = packageVersion,
): HookRecord {
  return hookRecord(record, {
    recordId: (source) => interruptedHookRecordId(source, record.EventId, record.EventStatus, hookName, attempt),
    nowMs,
    outcome: "Interrupted",
    exitCode: -1,
    elapsedMs: 0,
    detail: truncate(`${hookName}: ${detail}`, maxDetailChars),
    agentVersion,
  });
}

interface HookResult {
  recordId: RecordIdMaker;
  nowMs: number;
  outcome: HookRecord["Outcome"];
  exitCode: number;
  elapsedMs: number;
  detail: string;
  agentVersion: string;
}

function hookRecord(record: TransitionRecord, result: HookResult): HookRecord {
  // The hook reports from the VM and installation its transition record came from.
  return buildRecord<HookRecord>({ vm: record, agentVersion: result.agentVersion }, result.nowMs, result.recordId, {
    RecordType: "Hook",
    EventId: record.EventId,
    EventType: record.EventType,
    EventStatus: record.EventStatus,
    Outcome: result.outcome,
    ExitCode: result.exitCode,
    // A long column: whole milliseconds (the monotonic clock reads fractions, which the Logs Ingestion stream refuses).
    ElapsedMs: Math.round(result.elapsedMs),
    Detail: result.detail,
  });
}

const metricOutcome: Record<HookRecord["Outcome"], string> = {
  Succeeded: "succeeded",
  Failed: "failed",
  TimedOut: "timed_out",
  Interrupted: "interrupted",
};

const spawnFailureReasons: Record<string, string> = {
  ENOENT: "no such file or directory",
  EACCES: "permission denied (not executable?)",
  E2BIG: "argument list too long",
};

/** Why a command could not start, e.g. `ENOENT (no such file or directory)`. */
function spawnFailureText(err: Error): string {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === undefined) return redactSecrets(err.message);
  const reason = spawnFailureReasons[code];
  return reason ? `${code} (${reason})` : code;
}

/** Says which argument or variable holds a NUL character (no process can receive one), or undefined. */
function unpassableStrings(entries: readonly (readonly [string, string])[]): string | undefined {
  const bad = entries.filter(([, value]) => value.includes("\0")).map(([name]) => name);
  return bad.length === 0 ? undefined : `${bad.join(", ")} would hold a NUL character, which no process can receive`;
}

function lastLines(text: string, count: number): string {
  return text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== "")
    .slice(-count)
    .join(" | ");
}

function truncate(text: string, maxChars: number): string {
  return text.length <= maxChars ? text : `${text.slice(0, maxChars - 1)}…`;
}
