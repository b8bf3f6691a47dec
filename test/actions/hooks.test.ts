import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { recordSource } from "../../src/contract/record-id.js";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  hookRecordId,
  hooksConfigSchema,
  runHook,
  selectHooks,
  hookSchema,
  type HookConfig,
} from "../../src/agent/actions/hooks/hooks.js";
import { AgentMetrics } from "../../src/agent/observability/metrics.js";
import { silentLogger } from "../../src/agent/observability/logger.js";
import { transition } from "./fixtures.js";

const dir = mkdtempSync(join(tmpdir(), "sef-hooks-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const node = process.execPath;
const hook = (overrides: Partial<HookConfig> & Pick<HookConfig, "command">): HookConfig =>
  hookSchema.parse({ name: "drain", on: ["Scheduled"], ...overrides });

/** A node script that writes what the hook received (argv, SEF_* env, stdin) as JSON to `out`. */
const recorderScript = `
const fs = require("node:fs");
let stdin = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (c) => (stdin += c));
process.stdin.on("end", () => {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith("SEF_")));
  fs.writeFileSync(process.env.OUT_FILE, JSON.stringify({ argv: process.argv.slice(1), env, stdin }));
});`;

describe("runHook", () => {
  it("runs the command with the record on stdin and SEF_* variables, and records success", async () => {
    const out = join(dir, "ok.json");
    const record = transition();
    const metrics = new AgentMetrics();
    const result = await runHook(
      hook({ command: [node, "-e", recorderScript], passEnvironment: ["OUT_FILE"] }),
      record,
      {
        logger: silentLogger(),
        env: { ...process.env, OUT_FILE: out },
        metrics,
        agentVersion: "9.9.9",
      },
    );
    expect(result).toMatchObject({
      RecordType: "Hook",
      EventId: record.EventId,
      EventType: "Freeze",
      EventStatus: "Scheduled",
      Outcome: "Succeeded",
      ExitCode: 0,
      VmName: record.VmName,
      VmId: record.VmId,
      AgentVersion: "9.9.9",
    });
    expect(result.Detail).toBe("drain: exit 0");
    expect(result.ElapsedMs).toBeGreaterThanOrEqual(0);
    expect(result.RecordId).toBe(
      hookRecordId(recordSource(record), record.EventId.toLowerCase(), "Scheduled", "drain"),
    );

    const seen = JSON.parse(readFileSync(out, "utf8")) as { env: Record<string, string>; stdin: string };
    expect(JSON.parse(seen.stdin)).toEqual(record);
    expect(seen.env).toMatchObject({
      SEF_HOOK_NAME: "drain",
      SEF_EVENT_ID: record.EventId,
      SEF_EVENT_STATUS: "Scheduled",
      SEF_EVENT_TYPE: "Freeze",
      SEF_RESOURCES: "WestNO_0,WestNO_1",
      SEF_NOT_BEFORE: "2022-04-11T22:26:58.000Z",
      SEF_DURATION_IN_SECONDS: "5",
      SEF_AFFECTS_THIS_VM: "true",
      SEF_VM_NAME: "WestNO_0",
      SEF_RECORD_ID: record.RecordId,
      SEF_DOCUMENT_INCARNATION: "2",
    });
    expect(await metrics.render()).toMatch(/^sef_hooks_total\{outcome="succeeded"\} 1$/m);
  });

  it("records a non-zero exit as Failed with the exit code and the last stderr lines", async () => {
    const script = `for (let i = 1; i <= 8; i++) console.error("line " + i); process.exit(3);`;
    const result = await runHook(hook({ command: [node, "-e", script] }), transition(), { logger: silentLogger() });
    expect(result.Outcome).toBe("Failed");
    expect(result.ExitCode).toBe(3);
    expect(result.Detail).toMatch(/^drain: exit 3; stderr: line 4 \| line 5 \| line 6 \| line 7 \| line 8$/);
  });

  it("truncates a long stderr in Detail", async () => {
    const script = `process.stderr.write("x".repeat(5000)); process.exit(1);`;
    const result = await runHook(hook({ command: [node, "-e", script] }), transition(), { logger: silentLogger() });
    expect(result.Outcome).toBe("Failed");
    expect(result.Detail.length).toBeLessThanOrEqual(1000);
    expect(result.Detail.startsWith("drain: exit 1; stderr: xxx")).toBe(true);
  });

  it("kills a hook past its timeout and records TimedOut", async () => {
    const metrics = new AgentMetrics();
    const started = Date.now();
    const result = await runHook(
      hook({ command: [node, "-e", "setInterval(() => {}, 1000)"], timeoutMs: 300, killGraceMs: 10_000 }),
      transition(),
      {
        logger: silentLogger(),
        metrics,
      },
    );
    expect(result.Outcome).toBe("TimedOut");
    expect(result.ExitCode).toBe(-1);
    expect(result.Detail).toBe("drain: timed out after 300 ms");
    expect(result.ElapsedMs).toBeGreaterThanOrEqual(300);
    expect(Date.now() - started).toBeLessThan(8000); // SIGTERM sufficed (no wait for the 10 s grace)
    expect(await metrics.render()).toMatch(/^sef_hooks_total\{outcome="timed_out"\} 1$/m);
  });

  it("SIGKILLs a hook that ignores SIGTERM after the grace period", async () => {
    const ready = join(dir, "ignores-term.ready");
    const script = `process.on("SIGTERM", () => {}); require("node:fs").writeFileSync(${JSON.stringify(ready)}, ""); setInterval(() => {}, 1000);`;
    const controller = new AbortController();
    const running = runHook(
      hook({ command: [node, "-e", script], timeoutMs: 60_000, killGraceMs: 300 }),
      transition(),
      {
        logger: silentLogger(),
        signal: controller.signal,
      },
    );
    // Stop it only once its SIGTERM handler is installed (node start-up time varies under load).
    for (let i = 0; i < 200 && !existsSync(ready); i++) await new Promise((r) => setTimeout(r, 25));
    const stoppedAt = Date.now();
    controller.abort();
    const result = await running;
    expect(result.Outcome).toBe("Interrupted");
    expect(result.ExitCode).toBe(-1);
    expect(Date.now() - stoppedAt).toBeGreaterThanOrEqual(250); // survived SIGTERM, ended by SIGKILL after the grace
    expect(Date.now() - stoppedAt).toBeLessThan(5000);
  });

  it.runIf(process.platform !== "win32")("when stopped, also stops the processes the hook started", async () => {
    const pidFile = join(dir, "grandchild.pid");
    const script = `
      const { spawn } = require("node:child_process");
      const child = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
      require("node:fs").writeFileSync(${JSON.stringify(pidFile)}, String(child.pid));
      setInterval(() => {}, 1000);`;
    const controller = new AbortController();
    const running = runHook(
      hook({ command: [node, "-e", script], timeoutMs: 60_000, killGraceMs: 1000 }),
      transition(),
      {
        logger: silentLogger(),
        signal: controller.signal,
      },
    );
    for (let i = 0; i < 200 && !existsSync(pidFile); i++) await new Promise((r) => setTimeout(r, 25));
    controller.abort();
    const result = await running;
    expect(result.Outcome).toBe("Interrupted");
    const pid = Number(readFileSync(pidFile, "utf8"));
    const alive = (): boolean => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    for (let i = 0; i < 40 && alive(); i++) await new Promise((r) => setTimeout(r, 50));
    expect(alive()).toBe(false);
  });

  it("stops a running hook when the caller aborts (shutdown)", async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const result = await runHook(
      hook({ command: [node, "-e", "setInterval(() => {}, 1000)"], timeoutMs: 60_000 }),
      transition(),
      {
        logger: silentLogger(),
        signal: controller.signal,
      },
    );
    expect(result.Outcome).toBe("Interrupted");
    expect(result.Detail).toBe("drain: interrupted: the agent stopped while it ran");
  });

  it("records a command that cannot start as Failed with ExitCode -1 and the reason", async () => {
    const result = await runHook(hook({ command: [join(dir, "no-such-hook")] }), transition(), {
      logger: silentLogger(),
    });
    expect(result).toMatchObject({ Outcome: "Failed", ExitCode: -1 });
    expect(result.Detail).toBe(`drain: cannot start ${join(dir, "no-such-hook")}: ENOENT (no such file or directory)`);
  });

  it.runIf(process.platform !== "win32")("records a command that is not executable as Failed with EACCES", async () => {
    const script = join(dir, "not-executable.sh");
    writeFileSync(script, "#!/bin/sh\nexit 0\n", { mode: 0o644 });
    const result = await runHook(hook({ command: [script] }), transition(), { logger: silentLogger() });
    expect(result).toMatchObject({ Outcome: "Failed", ExitCode: -1 });
    expect(result.Detail).toContain("EACCES (permission denied");
  });

  it("passes shell metacharacters through verbatim and never runs them", async () => {
    const marker = join(dir, "pwned");
    const nasty = `$(touch ${marker}) \`touch ${marker}\`; touch ${marker} && echo "it's" '"quoted"' | cat > ${marker}`;
    const out = join(dir, "meta.json");
    const record = transition({ EventId: nasty, Description: nasty, Resources: [nasty, "b;c"] });
    const result = await runHook(
      hook({ command: [node, "-e", recorderScript, nasty], passEnvironment: ["OUT_FILE"] }),
      record,
      {
        logger: silentLogger(),
        env: { ...process.env, OUT_FILE: out },
      },
    );
    expect(result.Outcome).toBe("Succeeded");
    expect(existsSync(marker)).toBe(false);
    const seen = JSON.parse(readFileSync(out, "utf8")) as {
      argv: string[];
      env: Record<string, string>;
      stdin: string;
    };
    expect(seen.argv).toEqual([nasty]);
    expect(seen.env.SEF_EVENT_ID).toBe(nasty);
    expect(seen.env.SEF_DESCRIPTION).toBe(nasty);
    expect(seen.env.SEF_RESOURCES).toBe(`${nasty},b;c`);
    expect((JSON.parse(seen.stdin) as { EventId: string }).EventId).toBe(nasty);
  });
});

describe("a hook's environment", () => {
  const agentEnv = {
    PATH: "/usr/bin",
    Home: "/home/sef",
    LC_TIME: "C.UTF-8",
    TZ: "UTC",
    SystemRoot: "C:\\Windows",
    SEF_EVENTHUBS_CONNECTION_STRING: "Endpoint=sb://x/;SharedAccessKeyName=a;SharedAccessKey=b",
    AZURE_CLIENT_SECRET: "s3cret-value",
    HTTPS_PROXY: "http://user:pw@proxy:3128",
    LC: "not a locale category",
    UNSET: undefined,
  };

  it("starts the hook with that environment and the record's variables, never the agent's secrets", async () => {
    const out = join(dir, "env.json");
    const script = `require("fs").writeFileSync(process.argv[1], JSON.stringify(process.env))`;
    const result = await runHook(hook({ command: [node, "-e", script, out] }), transition(), {
      logger: silentLogger(),
      env: { ...agentEnv, SEF_EVENT_ID: "overridden by the record" },
    });
    expect(result.Outcome).toBe("Succeeded");
    const seen = JSON.parse(readFileSync(out, "utf8")) as Record<string, string>;
    expect(
      Object.keys(seen)
        .filter((k) => !k.startsWith("SEF_"))
        .sort(),
    ).toEqual(["Home", "LC_TIME", "PATH", "SystemRoot", "TZ"]);
    expect(seen.SEF_EVENT_ID).toBe(transition().EventId);
    expect(seen).not.toHaveProperty("SEF_EVENTHUBS_CONNECTION_STRING");
    expect(seen).not.toHaveProperty("AZURE_CLIENT_SECRET");
  });

  it("refuses a NUL character in a record string or in the command with a Failed record, never a throw", async () => {
    const marker = join(dir, "nul-ran");
    const touch = [node, "-e", `require("fs").writeFileSync(${JSON.stringify(marker)}, "")`];
    const fromImds = await runHook(hook({ command: touch }), transition({ Description: "a\u0000b" }), {
      logger: silentLogger(),
    });
    expect(fromImds).toMatchObject({ Outcome: "Failed", ExitCode: -1 });
    expect(fromImds.Detail).toBe(
      `drain: cannot start ${node}: SEF_DESCRIPTION would hold a NUL character, which no process can receive`,
    );
    const inCommand = await runHook(hook({ command: [...touch, "x\u0000"] }), transition(), { logger: silentLogger() });
    expect(inCommand.Detail).toContain(": command[3] would hold a NUL character");
    expect(existsSync(marker)).toBe(false);
  });
});

describe("selectHooks", () => {
  const hooks = hooksConfigSchema.parse([
    { name: "prepare", on: ["Scheduled"], command: ["/bin/true"] },
    { name: "recover", on: ["Completed", "Canceled"], command: ["/bin/true"] },
    { name: "freeze-only", on: ["Scheduled", "Started"], command: ["/bin/true"], eventTypes: ["freeze"] },
    { name: "fleet", on: ["Scheduled"], command: ["/bin/true"], affectsThisVmOnly: false },
  ]);
  const names = (r: Parameters<typeof selectHooks>[1]): string[] => selectHooks(hooks, r).map((h) => h.name);

  it("selects by status, event type (case-insensitive) and whether the event affects this VM", () => {
    expect(names(transition())).toEqual(["prepare", "freeze-only", "fleet"]);
    expect(names(transition({ EventType: "Reboot" }))).toEqual(["prepare", "fleet"]);
    expect(names(transition({ EventStatus: "Started" }))).toEqual(["freeze-only"]);
    expect(names(transition({ EventStatus: "Canceled" }))).toEqual(["recover"]);
    expect(names(transition({ AffectsThisVm: false }))).toEqual(["fleet"]);
  });
});

describe("hooks config", () => {
  it("applies defaults", () => {
    expect(hooksConfigSchema.parse(undefined)).toEqual([]);
    expect(hooksConfigSchema.parse([{ name: "a", on: ["Started"], command: ["x"] }])).toEqual([
      {
        name: "a",
        on: ["Started"],
        command: ["x"],
        timeoutMs: 60_000,
        killGraceMs: 5_000,
        affectsThisVmOnly: true,
        passEnvironment: [],
        onInterrupted: "skip",
      },
    ]);
  });

  it("refuses shell strings, empty commands, duplicate names and unknown statuses", () => {
    expect(hooksConfigSchema.safeParse([{ name: "a", on: ["Started"], command: "drain.sh --now" }]).success).toBe(
      false,
    );
    expect(hooksConfigSchema.safeParse([{ name: "a", on: ["Started"], command: [] }]).success).toBe(false);
    expect(hooksConfigSchema.safeParse([{ name: "a", on: ["Started"], command: [""] }]).success).toBe(false);
    expect(
      hooksConfigSchema.safeParse([
        { name: "a", on: ["Started"], command: ["x"] },
        { name: "a", on: ["Scheduled"], command: ["y"] },
      ]).success,
    ).toBe(false);
    expect(hooksConfigSchema.safeParse([{ name: "a", on: ["Approved"], command: ["x"] }]).success).toBe(false);
  });
});
