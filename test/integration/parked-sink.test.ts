// A sink taken out of the configuration keeps its backlog (the built agent, a real webhook receiver): a webhook down
// with 150 transitions waiting, a run without it (parked: a warning naming it, `sef outbox status`, the gauge, /readyz
// still ready), then put back — all 150 delivered, same RecordIds. Or given up: `sef outbox drop-sink` (refused beside a
// running agent) writes the 150 to the dead-letter file with the reason. A sink's identity is its name: the webhook
// comes back at another URL and is the same sink; the jsonl sink at another path is a new one (src/agent/sinks/README.md).
import { describe, expect, it } from "vitest";
import { createServer, type Server } from "node:http";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AddressInfo } from "node:net";
import { startSimulator, type Simulator } from "../../src/testbed/simulator/server.js";
import {
  logLines,
  readJsonl,
  runCli,
  waitForMetricsUrl,
  waitUntil,
  type RunningProcess,
} from "../helpers/agent-process.js";

const transitions = 150;

interface Receiver {
  readonly url: string;
  /** RecordIds of the transition records accepted (status 200 only). */
  readonly accepted: Set<string>;
  hits(): number;
  answer(status: number): void;
  close(): Promise<void>;
}

async function startReceiver(status: number): Promise<Receiver> {
  let answer = status;
  let hits = 0;
  const accepted = new Set<string>();
  const server: Server = createServer((req, res) => {
    hits += 1;
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (answer === 200) {
        for (const r of JSON.parse(Buffer.concat(chunks).toString("utf8")) as Array<{
          RecordType: string;
          RecordId: string;
        }>) {
          if (r.RecordType === "Transition") accepted.add(r.RecordId);
        }
      }
      res.writeHead(answer).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    accepted,
    hits: () => hits,
    answer: (s) => (answer = s),
    close: () => new Promise((r) => server.close(() => r())),
  };
}

function startAgent(dir: string, imdsUrl: string, sinks: Record<string, unknown>): RunningProcess {
  const path = join(dir, "config.json");
  const config = {
    imdsUrl,
    pollIntervalMs: 200,
    dataDir: join(dir, "data"),
    heartbeatIntervalMs: 0,
    metricsPort: 0,
    retry: { initialDelayMs: 100, maxDelayMs: 500 },
    ...sinks,
  };
  writeFileSync(path, JSON.stringify(config));
  return runCli(["run", "--config", path]);
}

async function sef(...args: string[]): Promise<{ code: number | string; stdout: string; stderr: string }> {
  const p = runCli(args);
  const code = await p.exited;
  return { code, stdout: p.stdout(), stderr: p.stderr() };
}

const transitionIds = (file: string): string[] =>
  readJsonl<{ RecordType: string; RecordId: string }>(file)
    .filter((r) => r.RecordType === "Transition")
    .map((r) => r.RecordId);

/** Run 1: webhook (down) + jsonl, 150 events; run 2: jsonl only, the webhook's 150 parked. Returns their RecordIds. */
async function parkWebhookBacklog(dir: string, sim: Simulator, down: Receiver): Promise<string[]> {
  const jsonl = join(dir, "records.jsonl");
  const first = startAgent(dir, sim.url, { sinks: ["webhook", `jsonl:${jsonl}`], webhook: { url: down.url } });
  try {
    await waitForMetricsUrl(first);
    sim.setEvents(
      Array.from({ length: transitions }, (_, i) => ({
        EventId: `9A4CED00-0000-4000-8000-${String(i).padStart(12, "0")}`,
        EventType: "Freeze",
        Resources: ["WestNO_0"],
        notBeforeInSeconds: 900,
      })),
    );
    await waitUntil(() => transitionIds(jsonl).length >= transitions, 20_000, "150 transitions written");
    await waitUntil(() => down.hits() >= 2, 10_000, "the webhook to fail twice");
    expect(await first.stop("SIGTERM")).toBe(0);
  } finally {
    await first.stop("SIGKILL");
  }
  const ids = transitionIds(jsonl);
  expect(ids).toHaveLength(transitions);

  const second = startAgent(dir, sim.url, { sinks: [`jsonl:${jsonl}`] });
  try {
    const base = await waitForMetricsUrl(second);
    const warning = logLines(second.stderr()).find((l) => l["sink"] === "webhook" && l["level"] === "warn");
    expect(warning, second.stderr()).toMatchObject({ records: transitions });
    expect(String(warning!["msg"])).toContain("sef outbox drop-sink webhook");
    const parkedMetrics = await (await fetch(`${base}/metrics`)).text();
    expect(parkedMetrics).toMatch(new RegExp(`^sef_outbox_parked_records ${transitions}$`, "m"));
    expect(parkedMetrics).toMatch(/^sef_outbox_parked_sinks 1$/m);
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    // A record appended now is not for the parked sink.
    sim.setEvents([
      {
        EventId: "9A4CED00-0000-4000-8000-999999999999",
        EventType: "Reboot",
        Resources: ["WestNO_0"],
        notBeforeInSeconds: 900,
      },
    ]);
    await waitUntil(
      () => transitionIds(jsonl).length > transitions,
      10_000,
      "a record written while the webhook is parked",
    );
    expect(await second.stop("SIGTERM")).toBe(0);
  } finally {
    await second.stop("SIGKILL");
  }
  const status = await sef("outbox", "status", "--data-dir", join(dir, "data"), "--json");
  expect(status.code, status.stderr).toBe(0);
  const parsed = JSON.parse(status.stdout) as { sinks: Array<{ sink: string }>; parked: unknown[] };
  expect(parsed.parked).toEqual([{ sink: "webhook", pending: transitions, deadLettered: 0 }]);
  expect(parsed.sinks.map((s) => s.sink)).toEqual([`jsonl:${jsonl}`]);
  const table = await sef("outbox", "status", "--data-dir", join(dir, "data"));
  expect(table.stdout).toMatch(
    new RegExp(`^parked .*\\nSINK\\s+PENDING\\s+DEAD_LETTERED\\nwebhook\\s+${transitions}\\s+0$`, "m"),
  );
  return ids;
}

describe("a sink taken out of the configuration", () => {
  it("is parked with its 150 records and, put back (at another URL: same name, same sink), gets all 150", async () => {
    const sim = await startSimulator({ scenario: "idle" });
    const down = await startReceiver(503);
    const up = await startReceiver(200);
    const dir = mkdtempSync(join(tmpdir(), "sef-parked-"));
    try {
      const ids = await parkWebhookBacklog(dir, sim, down);
      // The jsonl sink renamed (another path): a new sink, at the head — it gets none of the records already held.
      const renamed = join(dir, "renamed.jsonl");
      const third = startAgent(dir, sim.url, { sinks: ["webhook", `jsonl:${renamed}`], webhook: { url: up.url } });
      try {
        const base = await waitForMetricsUrl(third);
        await waitUntil(() => up.accepted.size >= transitions, 20_000, "the 150 parked records delivered");
        expect([...up.accepted].sort()).toEqual([...ids].sort());
        expect(
          logLines(third.stderr()).find((l) => String(l["msg"]).startsWith("new sinks start at the head")),
        ).toMatchObject({ sinks: [`jsonl:${renamed}`] });
        expect(existsSync(renamed) ? transitionIds(renamed) : []).toEqual([]);
        expect(
          logLines(third.stderr()).find(
            (l) => l["sink"] === "webhook" && l["level"] === "info" && String(l["msg"]).includes("resuming"),
          ),
        ).toMatchObject({ records: transitions });
        const resumedMetrics = await (await fetch(`${base}/metrics`)).text();
        expect(resumedMetrics).toMatch(/^sef_outbox_parked_records 0$/m);
        expect(resumedMetrics).toMatch(/^sef_outbox_parked_sinks 0$/m);
        expect(await third.stop("SIGTERM")).toBe(0);
      } finally {
        await third.stop("SIGKILL");
      }
    } finally {
      await Promise.all([down.close(), up.close(), sim.close()]);
    }
  }, 120_000);

  it("given up with `sef outbox drop-sink` (refused beside a running agent): its 150 records go to the dead-letter file with the reason", async () => {
    const sim = await startSimulator({ scenario: "idle" });
    const down = await startReceiver(503);
    const dir = mkdtempSync(join(tmpdir(), "sef-parked-drop-"));
    const dataDir = join(dir, "data");
    try {
      const ids = await parkWebhookBacklog(dir, sim, down);
      const running = startAgent(dir, sim.url, { sinks: [`jsonl:${join(dir, "records.jsonl")}`] });
      try {
        await waitForMetricsUrl(running);
        const refused = await sef("outbox", "drop-sink", "webhook", "--data-dir", dataDir);
        expect(refused.code).toBe(75);
        expect(refused.stderr).toContain(`refusing to drop a sink while an agent holds ${dataDir}`);
        expect(await running.stop("SIGTERM")).toBe(0);
      } finally {
        await running.stop("SIGKILL");
      }
      const unknown = await sef("outbox", "drop-sink", "webhok", "--data-dir", dataDir);
      expect(unknown.code).toBe(2);
      expect(unknown.stderr).toContain('no sink named "webhok"');

      const dropped = await sef("outbox", "drop-sink", "webhook", "--data-dir", dataDir);
      expect(dropped.code, dropped.stderr).toBe(0);
      expect(JSON.parse(dropped.stdout)).toMatchObject({ sink: "webhook", parked: true, deadLettered: transitions });
      const lines = readFileSync(join(dataDir, "dead-letter", "webhook.jsonl"), "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as { sink: string; reason: string; record: { RecordId: string } });
      expect(lines.map((l) => l.record.RecordId).sort()).toEqual([...ids].sort());
      for (const line of lines) {
        expect(line.sink).toBe("webhook");
        expect(line.reason).toMatch(
          /^given up by the operator \(sef outbox drop-sink webhook\): the sink was no longer configured/,
        );
      }
      const status = JSON.parse((await sef("outbox", "status", "--data-dir", dataDir, "--json")).stdout) as {
        parked: unknown[];
        outboxBytes: number;
      };
      expect(status).toMatchObject({ parked: [], outboxBytes: 0 });
    } finally {
      await Promise.all([down.close(), sim.close()]);
    }
  }, 120_000);
});
