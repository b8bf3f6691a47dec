// The hooks (actions/hooks/hooks.ts) in process: each run of a real `/bin/sh` hook supervised on a fake clock (its
// timeout, SIGTERM then SIGKILL to its process group, the settling after 'exit'), what the record, log and metrics say,
// the stderr tail, spawn failures, and the pure parts (variables, RecordIds, the Interrupted report, the schema).
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import {
  hookEnvironment,
  hookRecordId,
  hookSchema,
  hooksConfigSchema,
  interruptedHookRecord,
  interruptedHookRecordId,
  runHook,
  selectHooks,
  type HookConfig,
  type RunHookOptions,
} from "../../src/agent/actions/hooks/hooks.js";
import { agentVersion } from "../../src/agent/agent-version.js";
import { AgentMetrics } from "../../src/agent/observability/metrics.js";
import type { HookRecord, TransitionRecord } from "../../src/contract/record.js";
import { recordSource } from "../../src/contract/record-id.js";
import { capturingLogger } from "../helpers/capturing-logger.js";
import { FakeClock, flushAsync } from "../helpers/fake-clock.js";
import { metricValue } from "../helpers/metrics.js";
import { waitFor } from "../helpers/wait.js";
import { transition } from "./fixtures.js";

const dir = mkdtempSync(join(tmpdir(), "sef-hook-runs-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Processes a test left running on purpose (a hook's background process): killed after each test. */
const strays: number[] = [];
afterEach(() => {
  for (const pid of strays.splice(0)) if (alive(pid)) process.kill(pid, "SIGKILL");
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const hook = (script: string, overrides: Partial<HookConfig> = {}): HookConfig =>
  hookSchema.parse({ name: "drain", on: ["Scheduled"], command: ["/bin/sh", "-c", script], ...overrides });

/** Each step is a local process starting or ending: seconds are plenty, and a broken supervisor fails fast. */
const soon = { timeoutMs: 5000 };

interface Run {
  readonly clock: FakeClock;
  readonly lines: Array<Record<string, unknown>>;
  readonly metrics: AgentMetrics;
  readonly abort: AbortController;
  /** The record, once runHook has returned. */
  result(): HookRecord | undefined;
  /** Waits (on real time: the hook is a real process) for runHook to return. */
  settled(): Promise<HookRecord>;
}

/** Starts runHook on a fake clock (started at the fixture's observation time plus a minute). */
function start(config: HookConfig, record: TransitionRecord = transition(), options: Partial<RunHookOptions> = {}) {
  const clock = new FakeClock(Date.parse("2022-04-11T22:11:00.000Z"));
  const { logger, lines } = capturingLogger();
  const metrics = new AgentMetrics();
  const abort = new AbortController();
  let result: HookRecord | undefined;
  const running = runHook(config, record, { logger, clock, metrics, signal: abort.signal, ...options }).then((r) => {
    result = r;
    return r;
  });
  const run: Run = {
    clock,
    lines,
    metrics,
    abort,
    result: () => result,
    settled: async () => {
      await waitFor("the hook's record", () => result !== undefined, soon);
      return running;
    },
  };
  return run;
}

const hooksTotal = async (run: Run, outcome: string): Promise<number> =>
  metricValue(await run.metrics.registry.metrics(), "sef_hooks_total", { outcome });

describe("runHook on a fake clock", () => {
  it("hands the hook the record as one JSON line on stdin; a success is logged at info and counted", async () => {
    const stdinFile = join(dir, "stdin.json");
    const record = transition();
    const run = start(hook(`cat > "$STDIN_FILE"`, { passEnvironment: ["STDIN_FILE"] }), record, {
      env: { PATH: process.env.PATH, STDIN_FILE: stdinFile },
    });
    const result = await run.settled();
    expect(readFileSync(stdinFile, "utf8")).toBe(`${JSON.stringify(record)}\n`);
    expect(result).toMatchObject({
      RecordType: "Hook",
      RecordId: hookRecordId(recordSource(record), record.EventId, "Scheduled", "drain"),
      TimeGenerated: "2022-04-11T22:11:00.000Z",
      Outcome: "Succeeded",
      ExitCode: 0,
      ElapsedMs: 0, // no time passed on the hook's clock
      Detail: "drain: exit 0",
      AgentVersion: agentVersion,
    });
    expect(run.lines).toEqual([
      expect.objectContaining({
        level: 30,
        msg: "hook finished",
        hook: "drain",
        eventId: record.EventId,
        eventStatus: "Scheduled",
        outcome: "Succeeded",
        exitCode: 0,
        elapsedMs: 0,
      }),
    ]);
    expect(run.lines[0]).not.toHaveProperty("detail");
    expect(await hooksTotal(run, "succeeded")).toBe(1);
  });

  it("past its timeout sends SIGTERM to the hook, which may end its own way: TimedOut with its exit code", async () => {
    const ready = join(dir, "term-ready");
    // Ready once its child runs as a process of its own (a signal between a fork and an exec can be lost).
    const script = `trap 'exit 7' TERM; sh -c ': > "${ready}"; exec sleep 30' & wait`;
    const run = start(hook(script, { timeoutMs: 300, killGraceMs: 1000 }));
    await waitFor("the hook's trap", () => existsSync(ready), soon);
    await run.clock.advance(299);
    expect(run.result()).toBeUndefined();
    await run.clock.advance(1); // SIGTERM, and no SIGKILL needed: the grace period never passes
    const result = await run.settled();
    expect(result).toMatchObject({
      Outcome: "TimedOut",
      ExitCode: 7,
      ElapsedMs: 300,
      Detail: "drain: timed out after 300 ms",
    });
    expect(run.lines.at(-1)).toMatchObject({
      level: 40,
      msg: "hook did not succeed",
      outcome: "TimedOut",
      exitCode: 7,
      elapsedMs: 300,
      detail: "drain: timed out after 300 ms",
    });
    expect(await hooksTotal(run, "timed_out")).toBe(1);
  });

  it("when stopped, SIGKILLs a hook that outlives SIGTERM once the grace period is over: Interrupted", async () => {
    const marks = join(dir, "term-marks");
    const run = start(
      hook(`trap 'echo term >> "${marks}"' TERM; echo ready > "${marks}"; while :; do sleep 1; done`, {
        killGraceMs: 400,
      }),
    );
    await waitFor("the hook's trap", () => existsSync(marks), soon);
    run.abort.abort(new Error("stopping"));
    await waitFor("the hook's SIGTERM handler", () => readFileSync(marks, "utf8").includes("term"), soon);
    await run.clock.advance(399);
    expect(run.result()).toBeUndefined(); // it outlived SIGTERM, and the grace period is not over
    await run.clock.advance(1);
    const result = await run.settled();
    expect(result).toMatchObject({
      Outcome: "Interrupted",
      ExitCode: -1,
      ElapsedMs: 400,
      // The shell may say on stderr that its `sleep` was terminated.
      Detail: expect.stringMatching(/^drain: interrupted: the agent stopped while it ran(; stderr: .*)?$/),
    });
    expect(await hooksTotal(run, "interrupted")).toBe(1);
  });

  it("off Windows the hook leads a process group of its own; on Windows it is signalled alone", async () => {
    const ownGroup = join(dir, "own-group");
    // Field 5 of /proc/<pid>/stat is the process group (the shell's name, field 2, has no space).
    const writeGroup = (file: string) => `read -r pid _ _ _ pgrp _ < /proc/$$/stat; echo "$pid $pgrp" > "${file}"`;
    expect((await start(hook(writeGroup(ownGroup))).settled()).Outcome).toBe("Succeeded");
    const [pid, group] = readFileSync(ownGroup, "utf8").trim().split(" ");
    expect(group).toBe(pid);

    const agentGroup = join(dir, "agent-group");
    const run = start(hook(`${writeGroup(agentGroup)}; exec sleep 10`), transition(), { platform: "win32" });
    await waitFor("the hook's process group", () => existsSync(agentGroup) && readFileSync(agentGroup, "utf8"), soon);
    const testGroup = readFileSync("/proc/self/stat", "utf8").split(") ")[1]!.split(" ")[2];
    expect(readFileSync(agentGroup, "utf8").trim().split(" ")[1]).toBe(testGroup);
    run.abort.abort(new Error("stopping"));
    expect(await run.settled()).toMatchObject({ Outcome: "Interrupted", ExitCode: -1, ElapsedMs: 0 });
  });

  it("settles 1 s after 'exit' when a process the hook left keeps its stderr open, and leaves that process be", async () => {
    const pidFile = join(dir, "background.pid");
    const run = start(hook(`sleep 30 & echo $! > "${pidFile}"; exit 0`));
    await waitFor("the hook's exit", () => run.clock.pendingSleeps === 2, soon); // its timeout and the grace after exit
    strays.push(Number(readFileSync(pidFile, "utf8")));
    await run.clock.advance(999);
    expect(run.result()).toBeUndefined();
    await run.clock.advance(1);
    expect(await run.settled()).toMatchObject({ Outcome: "Succeeded", ExitCode: 0, ElapsedMs: 1000 });
    expect(alive(strays[0]!)).toBe(true); // a hook that succeeded has its background processes left alone
  });

  it("names a signal that ended the hook from elsewhere: Failed with ExitCode -1", async () => {
    const result = await start(hook("kill -KILL $$")).settled();
    expect(result).toMatchObject({ Outcome: "Failed", ExitCode: -1, Detail: "drain: killed by SIGKILL" });
  });

  it("discards the hook's stdout (a hook printing much never blocks) and survives one that never reads stdin", async () => {
    expect((await start(hook("head -c 1048576 /dev/zero")).settled()).Outcome).toBe("Succeeded");
    // A record larger than a pipe's buffer: writing it fails (EPIPE) once the hook has exited, which must not throw.
    const large = transition({ Description: "d".repeat(100_000) });
    const uncaught: unknown[] = [];
    const onUncaught = (err: unknown): number => uncaught.push(err);
    process.on("uncaughtException", onUncaught);
    const run = start(hook("exit 4"), large);
    const result = await run.settled().finally(async () => {
      await flushAsync();
      process.off("uncaughtException", onUncaught);
    });
    expect(uncaught).toEqual([]);
    expect(result).toMatchObject({ Outcome: "Failed", ExitCode: 4, Detail: "drain: exit 4" });
    expect(run.lines.at(-1)).toMatchObject({ level: 40, msg: "hook did not succeed", detail: "drain: exit 4" });
    expect(await hooksTotal(run, "failed")).toBe(1);
  });
});

describe("a hook's stderr in its record", () => {
  const failWith = async (stderr: string): Promise<string> => {
    const run = start(hook(`printf '%s' "$STDERR_TEXT" >&2; exit 1`, { passEnvironment: ["STDERR_TEXT"] }), undefined, {
      env: { PATH: process.env.PATH, STDERR_TEXT: stderr },
    });
    return (await run.settled()).Detail;
  };

  it("keeps its last five non-blank lines, trimmed, whatever the line ends", async () => {
    const stderr = "one\r\n  two  \n\n   \nthree\r\nfour\nfive\r\n six\n\n";
    expect(await failWith(stderr)).toBe("drain: exit 1; stderr: two | three | four | five | six");
  });

  it("reads only the last 4096 bytes of it", async () => {
    const stderr = `first line\n${"y".repeat(200)}\n${"z".repeat(3990)}`; // 4202 bytes: the first 106 are dropped
    expect(await failWith(stderr)).toBe(`drain: exit 1; stderr: ${"y".repeat(105)} | ${"z".repeat(868)}…`);
  });

  it("cuts Detail at 1000 characters, the last one an ellipsis", async () => {
    const prefix = "drain: exit 1; stderr: ";
    expect(await failWith("x".repeat(1000 - prefix.length))).toBe(`${prefix}${"x".repeat(1000 - prefix.length)}`);
    expect(await failWith("x".repeat(1001 - prefix.length))).toBe(`${prefix}${"x".repeat(999 - prefix.length)}…`);
  });
});

describe("a hook that cannot start", () => {
  it("names the error code alone when it has no plain words for it (a path through a file)", async () => {
    const file = join(dir, "a-file");
    writeFileSync(file, "");
    const command = join(file, "hook");
    const run = start(hookSchema.parse({ name: "drain", on: ["Scheduled"], command: [command] }));
    expect(await run.settled()).toMatchObject({
      Outcome: "Failed",
      ExitCode: -1,
      Detail: `drain: cannot start ${command}: ENOTDIR`,
    });
    expect(await hooksTotal(run, "failed")).toBe(1);
  });

  it("says an argument list is too long", async () => {
    const result = await start(hook("exit 0", { command: ["/bin/true", "a".repeat(200_000)] })).settled();
    expect(result).toMatchObject({ Outcome: "Failed", ExitCode: -1 });
    expect(result.Detail).toBe("drain: cannot start /bin/true: E2BIG (argument list too long)");
  });

  it("names every variable and argument that would hold a NUL character", async () => {
    const record = transition({ EventType: "Fre\u0000eze", Description: "a\u0000b" });
    const inRecord = await start(hook("exit 0"), record).settled();
    expect(inRecord.Detail).toBe(
      "drain: cannot start /bin/sh: SEF_EVENT_TYPE, SEF_DESCRIPTION would hold a NUL character, which no process can receive",
    );
    const inArgv = await start(hook("exit 0", { command: ["/bin/sh", "-c", "exit 0", "x\u0000"] })).settled();
    expect(inArgv.Detail).toBe(
      "drain: cannot start /bin/sh: command[3] would hold a NUL character, which no process can receive",
    );
  });
});

describe("a hook's variables and RecordIds", () => {
  it("gives every field of the record as a SEF_* variable, an absent NotBefore as empty", () => {
    const record = transition({ NotBefore: null, AffectsThisVm: false, ObservationGap: true });
    expect(hookEnvironment(record, "drain")).toEqual({
      SEF_HOOK_NAME: "drain",
      SEF_RECORD_ID: record.RecordId,
      SEF_EVENT_ID: "C7061BAC-AFDC-4513-B24B-AA5F13A16123",
      SEF_EVENT_STATUS: "Scheduled",
      SEF_PREVIOUS_STATUS: record.PreviousStatus,
      SEF_EVENT_TYPE: "Freeze",
      SEF_EVENT_SOURCE: "Platform",
      SEF_RESOURCE_TYPE: "VirtualMachine",
      SEF_RESOURCES: "WestNO_0,WestNO_1",
      SEF_NOT_BEFORE: "",
      SEF_DESCRIPTION: "Virtual machine is being paused because of a memory-preserving Live Migration operation.",
      SEF_DURATION_IN_SECONDS: "5",
      SEF_DOCUMENT_INCARNATION: "2",
      SEF_AFFECTS_THIS_VM: "false",
      SEF_OBSERVATION_GAP: "true",
      SEF_TIME_GENERATED: "2022-04-11T22:10:00.000Z",
      SEF_VM_NAME: "WestNO_0",
      SEF_VM_ID: "11111111-2222-3333-4444-555555555555",
      SEF_VM_RESOURCE_ID: "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/WestNO_0",
    });
  });

  it("keeps RecordIds of hook runs and their interruptions stable across versions, whatever the EventId's case", () => {
    const source = recordSource(transition());
    const id = "C7061BAC-AFDC-4513-B24B-AA5F13A16123";
    expect(hookRecordId(source, id, "Scheduled", "drain")).toBe("6bad4870-8d85-8170-ac6e-45a466989ca1");
    expect(hookRecordId(source, id.toLowerCase(), "Scheduled", "drain")).toBe("6bad4870-8d85-8170-ac6e-45a466989ca1");
    expect(interruptedHookRecordId(source, id, "Scheduled", "drain", 1)).toBe("0d3fad95-c5ad-8716-8fd0-be83b769e90d");
    expect(interruptedHookRecordId(source, id.toLowerCase(), "Scheduled", "drain", 2)).toBe(
      "c3da7c53-5b83-8446-b485-dd88b8395fa9",
    );
  });

  it("reports an interrupted run as a Hook record of its own: Interrupted, ExitCode -1, no time, Detail cut", () => {
    const record = transition();
    const nowMs = Date.parse("2022-04-11T22:12:00.000Z");
    expect(interruptedHookRecord("drain", record, 2, "interrupted: the agent died while it ran", nowMs)).toEqual({
      RecordId: interruptedHookRecordId(recordSource(record), record.EventId, "Scheduled", "drain", 2),
      RecordType: "Hook",
      TimeGenerated: "2022-04-11T22:12:00.000Z",
      ObservedAt: "2022-04-11T22:12:00.000Z",
      EventId: record.EventId,
      EventType: "Freeze",
      EventStatus: "Scheduled",
      Outcome: "Interrupted",
      ExitCode: -1,
      ElapsedMs: 0,
      Detail: "drain: interrupted: the agent died while it ran",
      VmName: record.VmName,
      VmId: record.VmId,
      VmResourceId: record.VmResourceId,
      SubscriptionId: record.SubscriptionId,
      ResourceGroup: record.ResourceGroup,
      Location: record.Location,
      VmScaleSetName: record.VmScaleSetName,
      Zone: record.Zone,
      Tags: record.Tags,
      AgentId: record.AgentId,
      AgentVersion: agentVersion,
    });
    const long = interruptedHookRecord("drain", record, 1, "x".repeat(2000), nowMs, "9.9.9");
    expect(long.Detail).toBe(`drain: ${"x".repeat(992)}…`);
    expect(long.AgentVersion).toBe("9.9.9");
  });
});

describe("hooks' configuration and selection", () => {
  const problems = (hooks: unknown): string[] =>
    hooksConfigSchema.safeParse(hooks).error?.issues.map((i) => i.message) ?? [];

  it("says why a command or a set of names is refused", () => {
    expect(problems([{ name: "a", on: ["Started"], command: ["", "x"] }])).toEqual([
      "command[0] must name an executable",
    ]);
    expect(
      problems([
        { name: "a", on: ["Started"], command: ["x"] },
        { name: "a", on: ["Scheduled"], command: ["y"] },
      ]),
    ).toEqual(["hook names must be unique"]);
    expect(problems([{ name: "a", on: ["Started"], command: ["x"], onInterrupted: "rerun" }])).toEqual([]);
  });

  it("passes only environment variable names: a letter or _ first, then letters, digits and _", () => {
    const passing = (names: string[]) =>
      problems([{ name: "a", on: ["Started"], command: ["x"], passEnvironment: names }]);
    expect(passing(["A", "b", "_", "Ab", "ab", "_b", "x_Aa9"])).toEqual([]);
    for (const name of ["", "1A", "A-", "-A", "A B", "é"]) expect(passing([name]), name).not.toEqual([]);
  });

  it("selects by any of several event types, in any case", () => {
    const hooks = hooksConfigSchema.parse([
      { name: "two", on: ["Scheduled"], command: ["x"], eventTypes: ["reboot", "FREEZE"] },
    ]);
    expect(selectHooks(hooks, transition()).map((h) => h.name)).toEqual(["two"]);
    expect(selectHooks(hooks, transition({ EventType: "Redeploy" }))).toEqual([]);
  });
});
