// The VM install artifacts: the hardened systemd unit (and `systemd-analyze verify` where the tool exists), the
// install script's interface, the cloud-init user data, the Windows installer and the example agent configs.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runInNewContext } from "node:vm";
import { afterAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { streamName } from "../../src/contract/stream-schema.js";
import { exitCodes } from "../../src/agent/cli/config-options.js";
import { repoRoot } from "./support/bicep.js";
import { cloudInitPath, installerDir, packageSha256Placeholder, renderCloudInit } from "./support/cloud-init.js";
import { runProcess } from "../helpers/run-process.js";

const read = (path: string): string => readFileSync(join(repoRoot, path), "utf8");
const scratch = mkdtempSync(join(tmpdir(), "sef-deploy-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** `[Section]` → key → values (a key may repeat). */
function parseUnit(text: string): Map<string, Map<string, string[]>> {
  const sections = new Map<string, Map<string, string[]>>();
  let current: Map<string, string[]> | undefined;
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#") || line.startsWith(";")) continue;
    const header = /^\[(\w+)\]$/.exec(line);
    if (header) {
      current = new Map();
      sections.set(header[1] ?? "", current);
      continue;
    }
    const eq = line.indexOf("=");
    if (current === undefined || eq < 0) throw new Error(`unexpected unit line: ${line}`);
    const key = line.slice(0, eq);
    current.set(key, [...(current.get(key) ?? []), line.slice(eq + 1)]);
  }
  return sections;
}

describe("infra/linux/sef.service", () => {
  const text = read("infra/linux/sef.service");
  const unit = parseUnit(text);
  const service = unit.get("Service") ?? new Map<string, string[]>();
  const one = (key: string): string | undefined => service.get(key)?.at(-1);

  it("runs the packaged agent with its config and secrets file, as a dedicated user with its own state directory", () => {
    expect(one("ExecStart")).toBe("/usr/bin/sef run --config /etc/sef/config.json");
    expect(one("EnvironmentFile")).toBe("-/etc/sef/sef.env");
    expect(one("User")).toBe("sef");
    expect(one("StateDirectory")).toBe("sef");
    expect(one("LogsDirectory")).toBe("sef");
    expect(unit.get("Install")?.get("WantedBy")).toEqual(["multi-user.target"]);
  });

  it("does not restart in a loop on configuration-class exit codes (bad config or taken port, unusable store)", () => {
    const prevented = (service.get("RestartPreventExitStatus") ?? []).join(" ").split(/\s+/);
    expect(prevented).toEqual(expect.arrayContaining([String(exitCodes.config), String(exitCodes.store)]));
  });

  it("restarts forever and stops with SIGTERM, leaving time to flush", () => {
    expect(one("Restart")).toBe("always");
    expect(one("RestartSec")).toMatch(/^[1-9]\d*s$/);
    expect(unit.get("Unit")?.get("StartLimitIntervalSec")).toEqual(["0"]);
    expect(one("KillSignal")).toBe("SIGTERM");
    // The agent's shutdownFlushMs defaults to 5 s; the stop timeout must stay well above it.
    expect(Number.parseInt(one("TimeoutStopSec") ?? "0", 10)).toBeGreaterThanOrEqual(30);
  });

  it("is sandboxed, without MemoryDenyWriteExecute (Node's JIT needs W+X pages)", () => {
    expect(Object.fromEntries([...service].map(([k, v]) => [k, v.join(" | ")]))).toMatchObject({
      ProtectSystem: "strict",
      ProtectHome: "yes",
      PrivateTmp: "yes",
      NoNewPrivileges: "yes",
      CapabilityBoundingSet: "",
      RestrictAddressFamilies: "AF_INET AF_INET6 AF_UNIX",
      ProtectKernelTunables: "yes",
      ProtectKernelModules: "yes",
      ProtectControlGroups: "yes",
      RestrictSUIDSGID: "yes",
      LockPersonality: "yes",
    });
    expect(service.get("SystemCallFilter")?.[0]).toBe("@system-service");
    expect(service.has("MemoryDenyWriteExecute")).toBe(false);
    expect(text).not.toMatch(/^\s*MemoryDenyWriteExecute/m);
  });

  it("passes `systemd-analyze verify` (npm test's set-up step installs systemd's tools)", () => {
    // verify checks that ExecStart's binary exists: point it at this Node when the package is not installed here.
    const unitText = existsSync("/usr/bin/sef")
      ? text
      : text.replace("ExecStart=/usr/bin/sef", `ExecStart=${process.execPath}`);
    const path = join(scratch, "sef.service");
    writeFileSync(path, unitText);
    const result = spawnSync("systemd-analyze", ["verify", path], { encoding: "utf8" });
    expect(`${result.stdout}${result.stderr}`.trim()).toBe("");
    expect(result.status).toBe(0);
  });

  it("verify catches a broken unit (so the check above can fail)", () => {
    const path = join(scratch, "broken.service");
    writeFileSync(path, "[Service]\nExecStart=relative/path/to/node\nRestart=sometimes\n");
    const result = spawnSync("systemd-analyze", ["verify", path], { encoding: "utf8" });
    expect(`${result.stdout}${result.stderr}`).not.toBe("");
  });
});

describe("infra/linux/install.sh", () => {
  const script = join(repoRoot, "infra/linux/install.sh");
  const run = (...args: string[]) => spawnSync("bash", [script, ...args], { encoding: "utf8" });

  it("is strict bash that parses", () => {
    const text = read("infra/linux/install.sh");
    expect(text.startsWith("#!/usr/bin/env bash\n")).toBe(true);
    expect(text).toMatch(/^set -euo pipefail$/m);
    expect(spawnSync("bash", ["-n", script]).status).toBe(0);
  });

  it("is shellcheck-clean as bash (npm test's set-up step installs shellcheck)", () => {
    const result = spawnSync("shellcheck", ["-s", "bash", script], { encoding: "utf8" });
    expect(result.stdout).toBe("");
    expect(result.status).toBe(0);
  });

  it("--help prints usage and exits 0", () => {
    const result = run("--help");
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/^Usage: install\.sh --package FILE/);
    expect(result.stdout).toContain("--config FILE");
    expect(result.stdout).toContain("--env-file FILE");
  });

  it("rejects unknown arguments and missing inputs before touching the system", () => {
    const unknown = run("--frobnicate");
    expect(unknown.status).not.toBe(0);
    expect(unknown.stderr).toContain("unknown argument: --frobnicate");
    const noPackage = run();
    expect(noPackage.status).not.toBe(0);
    expect(noPackage.stderr).toContain("--package is required");
    const missing = run("--package", join(scratch, "nope.deb"));
    expect(missing.status).not.toBe(0);
    expect(missing.stderr).toContain("no such package");
    const deb = join(scratch, "sef.deb");
    writeFileSync(deb, "");
    const noConfig = run("--package", deb, "--config", join(scratch, "nope.json"));
    expect(noConfig.status).not.toBe(0);
    expect(noConfig.stderr).toContain("no such config file");
  });
});

describe("infra/linux/cloud-init.yaml", () => {
  const text = readFileSync(cloudInitPath, "utf8");

  it("is up to date with the files it carries (regenerate with: npx tsx test/deploy/generate.ts)", () => {
    expect(text, "run: npx tsx test/deploy/generate.ts").toBe(renderCloudInit());
  });

  it("is #cloud-config YAML that downloads the package and runs the install script (no nodejs, no npm)", () => {
    expect(text.split("\n")[0]).toBe("#cloud-config");
    const data = parse(text) as {
      packages: string[];
      write_files: { path: string; content: string }[];
      runcmd: string[][];
    };
    expect(data.packages).not.toEqual(expect.arrayContaining(["nodejs"]));
    expect(data.packages).not.toEqual(expect.arrayContaining(["npm"]));
    expect(text).not.toMatch(/npm (install|ci)/);
    const byPath = new Map(data.write_files.map((f) => [f.path, f.content]));
    expect(byPath.get(`${installerDir}/install.sh`)).toBe(read("infra/linux/install.sh"));
    expect(byPath.get(`${installerDir}/package-url`)).toMatch(/\.deb\n$/);
    expect(byPath.get(`${installerDir}/package-sha256`)).toBe(`${packageSha256Placeholder}\n`);
    expect(JSON.parse(byPath.get(`${installerDir}/config.json`) ?? "")).toEqual(
      JSON.parse(read("infra/config/both.json")),
    );
    expect(data.runcmd.flat().join(" ")).toContain('./install.sh --package "${file}" --config config.json');
  });

  it("its runcmd installs the download only when it has the SHA-256 given in package-sha256", async () => {
    const data = parse(text) as { runcmd: string[][] };
    const runcmd = data.runcmd[0]![2]!;
    const bytes = Buffer.from("a sef package\n");
    const server = createServer((req, res) => res.end(req.url === "/sef_9.9.9_amd64.deb?sv=x" ? bytes : ""));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/sef_9.9.9_amd64.deb?sv=x`;
      const boot = async (sha: string) => {
        const dir = mkdtempSync(join(scratch, "cloud-init-"));
        writeFileSync(join(dir, "package-url"), `${url}\n`);
        writeFileSync(join(dir, "package-sha256"), `${sha}\n`);
        writeFileSync(join(dir, "install.sh"), '#!/bin/sh\necho "$@" > installed\n', { mode: 0o755 });
        const result = await runProcess("bash", ["-c", runcmd.replace(`cd ${installerDir};`, `cd '${dir}';`)], 60_000);
        return { ...result, dir, installed: existsSync(join(dir, "installed")) };
      };
      const right = await boot(createHash("sha256").update(bytes).digest("hex"));
      expect(right.code, right.stderr).toBe(0);
      expect(readFileSync(join(right.dir, "installed"), "utf8")).toBe(
        "--package sef_9.9.9_amd64.deb --config config.json\n",
      );
      for (const wrong of ["0".repeat(64), packageSha256Placeholder]) {
        const refused = await boot(wrong);
        expect(refused.code).not.toBe(0);
        expect(refused.installed).toBe(false);
        expect(refused.stderr).toContain(
          `sef: sef_9.9.9_amd64.deb does not have the SHA-256 in package-sha256 (${wrong}): not installing it`,
        );
      }
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("its runcmd is shellcheck-clean bash", () => {
    const data = parse(text) as { runcmd: string[][] };
    for (const command of data.runcmd) {
      expect(command.slice(0, 2)).toEqual(["bash", "-c"]);
      const result = spawnSync("shellcheck", ["-s", "bash", "-"], {
        input: `#!/usr/bin/env bash\n${command[2]}\n`,
        encoding: "utf8",
      });
      expect(result.stdout).toBe("");
      expect(result.status).toBe(0);
    }
  });
});

describe("infra/windows/install.ps1", () => {
  const text = read("infra/windows/install.ps1");

  it("is a thin wrapper around the zip's WinSW service, config written as UTF-8 without BOM, no npm", () => {
    expect(text).toContain('Invoke-SefNative $Wrapper @("install")');
    expect(text).toContain("Start-SefService $ServiceName");
    expect(text).toContain("$Utf8NoBom = New-Object Text.UTF8Encoding $false");
    expect(text).toContain("[IO.File]::WriteAllText($ConfigFile, ($config | ConvertTo-Json -Depth 20), $Utf8NoBom)");
    expect(text).not.toMatch(/Set-Content|Out-File|ScheduledTask|npm/);
    expect(text).toContain('"*S-1-5-18:(OI)(CI)F", "*S-1-5-32-544:(OI)(CI)F"'); // run under pwsh: windows-scripts.test.ts
    expect(text).toContain("/readyz");
    expect(text).toMatch(/^\$ErrorActionPreference = "Stop"$/m);
  });
});

describe("infra/windows/sef-service.xml (WinSW)", () => {
  const xml = read("infra/windows/sef-service.xml");

  it("runs node.exe on the launcher, stops with Ctrl+C and a timeout, restarts on failure, rolls its logs", () => {
    expect(xml).toContain("<executable>%BASE%\\node.exe</executable>");
    expect(xml).toContain('"%BASE%\\sef-service.mjs" run --config "%ProgramData%\\sef\\config.json"');
    expect(xml).toContain("<stopparentprocessfirst>true</stopparentprocessfirst>");
    expect(xml).toMatch(/<onfailure action="restart" delay="10 sec"\/>/);
    expect(xml).toMatch(/<log mode="roll-by-size">/);
  });
});

describe("infra/config examples", () => {
  const topKeys = [
    "imdsUrl",
    "apiVersion",
    "pollIntervalMs",
    "dataDir",
    "sinks",
    "logLevel",
    "heartbeatIntervalMs",
    "eventhubs",
    "loganalytics",
  ];
  const sectionKeys: Record<string, string[]> = {
    eventhubs: ["fullyQualifiedNamespace", "eventHubName", "credential", "managedIdentityClientId"],
    loganalytics: ["endpoint", "ruleId", "streamName", "credential", "managedIdentityClientId"],
  };
  const examples: Record<string, string[]> = {
    "eventhubs.json": ["eventhubs"],
    "loganalytics.json": ["loganalytics"],
    "both.json": ["eventhubs", "loganalytics", "jsonl:/var/log/sef/records.jsonl"],
    "stdout.json": ["stdout"],
    "jsonl.json": ["jsonl:/var/log/sef/records.jsonl"],
  };

  for (const [name, sinks] of Object.entries(examples)) {
    it(`${name} uses only the documented keys and managed identity`, () => {
      const config = JSON.parse(read(`infra/config/${name}`)) as Record<string, unknown>;
      expect(config.sinks).toEqual(sinks);
      for (const key of Object.keys(config)) expect(topKeys, `${name}: ${key}`).toContain(key);
      expect(config).toMatchObject({
        imdsUrl: "http://169.254.169.254",
        apiVersion: "2020-07-01",
        dataDir: "/var/lib/sef",
      });
      for (const [section, keys] of Object.entries(sectionKeys)) {
        const value = config[section] as Record<string, unknown> | undefined;
        expect(value !== undefined, `${name}: section ${section} iff sink ${section}`).toBe(sinks.includes(section));
        if (value === undefined) continue;
        expect(Object.keys(value).sort()).toEqual([...keys].sort());
        expect(value.credential).toBe("managedIdentity");
        expect(value.managedIdentityClientId).toMatch(/^[0-9a-f-]{36}$/);
      }
      const la = config.loganalytics as Record<string, string> | undefined;
      if (la) {
        expect(la.streamName).toBe(streamName);
        expect(la.ruleId).toMatch(/^dcr-[0-9a-f]{32}$/);
        expect(la.endpoint).toMatch(/^https:\/\/[^/]+\.ingest\.monitor\.azure\.com$/);
      }
      const eh = config.eventhubs as Record<string, string> | undefined;
      if (eh) expect(eh.fullyQualifiedNamespace).toMatch(/^[a-z][a-z0-9-]+\.servicebus\.windows\.net$/i);
    });
  }
});

describe("hooks that need root: sef-hook@.service, its polkit rule and sef-privileged-hook (the agent stays sef)", () => {
  /** `systemd-analyze security --offline` over a root holding the unit: systemd's own reading. */
  function security(): { exposure: number; failing: Set<string> } {
    const root = mkdtempSync(join(scratch, "unit-root-"));
    const unitDir = join(root, "usr/lib/systemd/system");
    mkdirSync(unitDir, { recursive: true });
    writeFileSync(join(unitDir, "sef.service"), read("infra/linux/sef.service"));
    const args = ["security", "--offline=true", `--root=${root}`, "--no-pager", "sef.service"];
    const text = spawnSync("systemd-analyze", args, { encoding: "utf8" });
    const json = spawnSync("systemd-analyze", [...args, "--json=short"], { encoding: "utf8" });
    const exposure = Number(/Overall exposure level for sef\.service: ([\d.]+)/.exec(text.stdout)?.[1] ?? NaN);
    const checks = JSON.parse(json.stdout) as { json_field: string; set: boolean | null }[];
    return { exposure, failing: new Set(checks.filter((c) => c.set === false).map((c) => c.json_field)) };
  }

  it("the agent's unit stays sandboxed and unprivileged, without core dumps, with /run/sef for the hook records", () => {
    const base = security();
    expect(base.exposure).toBeLessThanOrEqual(2);
    for (const field of ["UserOrDynamicUser", "NoNewPrivileges", "SystemCallFilter_privileged", "ProtectSystem"])
      expect(base.failing.has(field), field).toBe(false);
    const service = parseUnit(read("infra/linux/sef.service")).get("Service")!;
    expect(service.get("LimitCORE")).toEqual(["0"]);
    expect(service.get("RuntimeDirectory")).toEqual(["sef"]);
    expect(service.get("User")).toEqual(["sef"]);
    expect(existsSync(join(repoRoot, "infra/linux/sef-privileged-hooks.conf"))).toBe(false);
  });

  it("the template runs only /etc/sef/hooks.d/NAME as root, the record as stdin, and passes `systemd-analyze verify`", () => {
    const text = read("infra/linux/sef-hook@.service");
    const service = parseUnit(text).get("Service")!;
    expect(Object.fromEntries([...service].map(([k, v]) => [k, v.join(" | ")]))).toMatchObject({
      Type: "oneshot",
      ExecStart: "/etc/sef/hooks.d/%i",
      StandardInput: "file:/run/sef/hook-%i.json",
      LimitCORE: "0",
    });
    expect(service.has("User")).toBe(false); // root
    const dir = mkdtempSync(join(scratch, "template-"));
    // verify checks that ExecStart's binary exists: an instance whose hook is this Node.
    writeFileSync(
      join(dir, "sef-hook@.service"),
      text.replace("ExecStart=/etc/sef/hooks.d/%i", `ExecStart=${process.execPath}`),
    );
    const result = spawnSync("systemd-analyze", ["verify", join(dir, "sef-hook@.service")], {
      encoding: "utf8",
      cwd: dir,
    });
    expect(`${result.stdout}${result.stderr}`.trim()).toBe("");
    expect(result.status).toBe(0);
  });

  it("the polkit rule lets user sef start and stop sef-hook@NAME.service and nothing else", () => {
    const Result = { YES: "yes", NO: "no", NOT_HANDLED: "not-handled" } as const;
    const rules: ((action: unknown, subject: unknown) => string)[] = [];
    runInNewContext(read("infra/linux/50-sef-hooks.rules"), {
      polkit: { Result, addRule: (r: never) => rules.push(r) },
    });
    expect(rules).toHaveLength(1);
    const decide = (user: string, details: Record<string, string>, id = "org.freedesktop.systemd1.manage-units") =>
      rules[0]!({ id, lookup: (key: string) => details[key] }, { user });
    expect(decide("sef", { unit: "sef-hook@drain.service", verb: "start" })).toBe("yes");
    expect(decide("sef", { unit: "sef-hook@drain-node_2.service", verb: "stop" })).toBe("yes");
    for (const [user, details, id] of [
      ["sef", { unit: "sef-hook@drain.service", verb: "restart" }],
      ["sef", { unit: "sef-hook@drain.service", verb: "enable" }],
      ["sef", { unit: "sef.service", verb: "start" }],
      ["sef", { unit: "reboot.target", verb: "start" }],
      ["sef", { unit: "sef-hook@../x.service", verb: "start" }],
      ["sef", { unit: "sef-hook@.service", verb: "start" }],
      ["sef", { unit: "sef-hook@drain.service.d", verb: "start" }],
      ["sef", { verb: "start" }],
      ["nobody", { unit: "sef-hook@drain.service", verb: "start" }],
      ["sef", { unit: "sef-hook@drain.service", verb: "start" }, "org.freedesktop.login1.reboot"],
    ] as [string, Record<string, string>, string?][]) {
      expect(decide(user, details, id), `${user} ${JSON.stringify(details)} ${id ?? ""}`).toBe("not-handled");
    }
  });

  it("sef-privileged-hook hands the record to the unit, returns its status, refuses a NAME that is not one", () => {
    const dir = mkdtempSync(join(scratch, "privileged-hook-"));
    mkdirSync(join(dir, "bin"));
    // A stand-in for systemctl (no systemd runs here): records its arguments, fails like a failed unit would.
    writeFileSync(join(dir, "bin/systemctl"), `#!/bin/sh\necho "$*" >> "${dir}/calls"\nexit 3\n`, { mode: 0o755 });
    const hook = (name: string) =>
      spawnSync("/bin/sh", [join(repoRoot, "infra/linux/sef-privileged-hook"), name], {
        input: '{"EventId":"e1"}\n',
        encoding: "utf8",
        env: { PATH: `${dir}/bin:/usr/bin:/bin`, SEF_PRIVILEGED_HOOK_DIR: dir },
      });
    const ran = hook("drain");
    expect(ran.status).toBe(3);
    expect(readFileSync(join(dir, "calls"), "utf8")).toBe("start sef-hook@drain.service\n");
    expect(readFileSync(join(dir, "hook-drain.json"), "utf8")).toBe('{"EventId":"e1"}\n');
    for (const bad of ["", "../etc", "a b", "x.service"]) {
      const refused = hook(bad);
      expect(refused.status, bad).toBe(64);
      expect(refused.stderr).toMatch(/^usage: sef-privileged-hook NAME/);
    }
    expect(readFileSync(join(dir, "calls"), "utf8")).toBe("start sef-hook@drain.service\n");
  });

  it("is documented in infra/README.md with the files to install", () => {
    const readme = read("infra/README.md");
    for (const file of ["sef-hook@.service", "50-sef-hooks.rules", "sef-privileged-hook"])
      expect(readme).toContain(file);
  });
});

describe("infra/container/Dockerfile and infra/helm/sef/Chart.yaml", () => {
  it("the image is a pinned digest, runs as non-root, and starts the bundle on the shipped runtime", () => {
    const dockerfile = read("infra/container/Dockerfile");
    // The base is overridable only for tests (container-image.test.ts); its default is the pinned digest.
    expect(dockerfile).toMatch(/^ARG BASE_IMAGE=[^\s@]+@sha256:[0-9a-f]{64}\nFROM \$\{BASE_IMAGE\}$/m);
    expect(dockerfile.match(/^FROM /gm)).toHaveLength(1);
    expect(dockerfile).toMatch(/^USER 65532:65532$/m);
    expect(dockerfile).toContain(
      'ENTRYPOINT ["/opt/sef/node", "--optimize-for-size", "--liftoff-only", "--no-maglev", "--no-turbofan", "/opt/sef/sef.mjs"]',
    );
  });

  const chartDir = join(repoRoot, "infra/helm/sef");
  const values = parse(read("infra/helm/sef/values.yaml")) as Record<string, unknown>;

  it("Chart.yaml is a v2 chart at the package's version", () => {
    const chart = parse(read("infra/helm/sef/Chart.yaml")) as Record<string, string>;
    const version = (JSON.parse(read("package.json")) as { version: string }).version;
    expect(chart).toMatchObject({ apiVersion: "v2", name: "sef", appVersion: version, version });
  });

  // helm.test.ts renders the chart with helm; this catches a template reading a value values.yaml does not have, which
  // helm renders as empty without a word (even `helm lint --strict`).
  it("every .Values path the templates use exists in values.yaml", () => {
    const lookup = (path: string[]): unknown =>
      path.reduce<unknown>((node, key) => (node as Record<string, unknown> | undefined)?.[key], values);
    const missing: string[] = [];
    for (const name of readdirSync(join(chartDir, "templates"))) {
      const text = readFileSync(join(chartDir, "templates", name), "utf8");
      for (const match of text.matchAll(/\.Values((?:\.[A-Za-z_][A-Za-z0-9_]*)+)/g)) {
        if (lookup(match[1]!.slice(1).split(".")) === undefined) missing.push(`${name}: .Values${match[1]}`);
      }
    }
    expect(missing).toEqual([]);
    expect(lookup(["nope"])).toBeUndefined();
  });
});
