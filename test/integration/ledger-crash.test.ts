// The delivery ledger across kill -9: the built agent forwards to a loopback webhook (answering 5xx at random) and a
// jsonl file, is killed at random moments and restarted on the same data directory. Nothing committed is lost, no
// record is accepted twice by the endpoint within one run (a repeat only follows a crash, with the same RecordId),
// and `sef outbox status` finds nothing pending and nothing dead-lettered at the end. The same with the Event Hubs
// and Log Analytics sinks against their local peers (on loopback, in this process) faulting at random. The kill
// moments and faults come from fast-check with a fixed seed per test (test/helpers/seed.ts: SEF_TEST_SEED explores
// others, and a failure names its seed).
import { describe, expect, it } from "vitest";
import { mkdtempSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { startSimulator } from "../../src/testbed/simulator/server.js";
import { startEventHubsEmulator } from "../../src/testbed/peers/eventhubs/server.js";
import { startLogsIngestionEmulator } from "../../src/testbed/peers/logs-ingestion/server.js";
import type { Fault } from "../../src/testbed/peers/logs-ingestion/faults.js";
import { writeFileSync } from "node:fs";
import { waitForMetricsUrl, runCli, readJsonl, waitUntil, type RunningProcess } from "../helpers/agent-process.js";
import { replayable, testRuns, testSeed } from "../helpers/seed.js";

describe("ledger across kill -9", () => {
  it("loses nothing and repeats a record at the endpoint only after a crash", async () => {
    const seed = testSeed(2604);
    const killDelaysMs = fc.sample(fc.integer({ min: 300, max: 1500 }), { numRuns: testRuns(4), seed });
    const answers = fc.sample(fc.constantFrom(200, 200, 200, 500, 503), { numRuns: 200, seed });
    await replayable(seed, async () => {
      let run = 0;
      let request = 0;
      const acceptedInRun = new Map<string, number[]>();
      const server = createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on("data", (c: Buffer) => chunks.push(c));
        req.on("end", () => {
          const status = answers[request++ % answers.length]!;
          if (status === 200) {
            for (const r of JSON.parse(Buffer.concat(chunks).toString()) as Array<{ RecordId: string }>)
              acceptedInRun.set(r.RecordId, [...(acceptedInRun.get(r.RecordId) ?? []), run]);
          }
          res.writeHead(status, status === 503 ? { "retry-after": "0" } : {}).end();
        });
      });
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
      const sim = await startSimulator({ scenario: "idle" });
      const dir = mkdtempSync(join(tmpdir(), "sef-ledger-crash-"));
      const out = join(dir, "records.jsonl");
      const args = [
        "run",
        "--imds-url",
        sim.url,
        "--poll-interval-ms",
        "200",
        "--data-dir",
        join(dir, "data"),
        "--sink",
        `webhook:${url}`,
        "--sink",
        `jsonl:${out}`,
        "--heartbeat-interval-ms",
        "0",
        "--metrics-port",
        "0",
      ];
      let agent: RunningProcess | undefined;
      try {
        for (const [i, delayMs] of killDelaysMs.entries()) {
          run = i;
          agent = runCli(args);
          sim.setEvents(
            Array.from({ length: i + 1 }, (_, k) => ({
              EventId: `BEEF0000-0000-4000-8000-00000000000${k}`,
              EventType: "Freeze",
              Resources: ["WestNO_0"],
              notBeforeInSeconds: 600,
            })),
          );
          await new Promise((r) => setTimeout(r, delayMs));
          await agent.stop("SIGKILL");
        }
        run = killDelaysMs.length;
        agent = runCli(args);
        await waitUntil(
          () => {
            const ids = readJsonl<{ RecordId: string }>(out).map((r) => r.RecordId);
            return ids.length >= killDelaysMs.length && ids.every((id) => acceptedInRun.has(id));
          },
          20_000,
          "every record in the jsonl file accepted by the webhook",
        );
        // Stop it only once it runs (its signal handlers are in place right after the metrics server is up).
        const final = agent;
        await waitForMetricsUrl(final);
        await new Promise((r) => setTimeout(r, 300));
        expect(await agent.stop("SIGTERM")).toBe(0);
      } finally {
        await agent?.stop("SIGKILL");
        await sim.close();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }

      const committed = new Set(readJsonl<{ RecordId: string }>(out).map((r) => r.RecordId));
      expect(committed.size).toBeGreaterThanOrEqual(killDelaysMs.length);
      for (const id of committed) expect(acceptedInRun.has(id), `${id} never reached the webhook`).toBe(true);
      for (const [id, runs] of acceptedInRun) {
        expect(committed.has(id), `${id} reached the webhook but is not in the jsonl file`).toBe(true);
        // Within one run a record the endpoint accepted is never sent again; a repeat only comes in a later run.
        expect(new Set(runs).size, `${id} accepted in runs ${runs.join(",")}`).toBe(runs.length);
      }

      const status = runCli(["outbox", "status", "--data-dir", join(dir, "data"), "--json"]);
      expect(await status.exited, status.stderr()).toBe(0);
      const sinks = (
        JSON.parse(status.stdout()) as { sinks: Array<{ sink: string; pending: number; deadLettered: number }> }
      ).sinks;
      expect(sinks.map((s) => [s.sink.split(":")[0], s.pending, s.deadLettered])).toEqual([
        ["jsonl", 0, 0],
        ["webhook", 0, 0],
      ]);
    });
  }, 90_000);

  it("Event Hubs and Log Analytics against their peers: loses nothing, repeats a record only after a crash, dead-letters only with a reason", async () => {
    const seed = testSeed(1105);
    const killDelaysMs = fc.sample(fc.integer({ min: 400, max: 1500 }), { numRuns: testRuns(4), seed });
    const ehFaults = fc.sample(fc.constantFrom<"ok" | "server-busy">("ok", "ok", "server-busy"), { numRuns: 40, seed });
    const laFaults = fc.sample(
      fc.constantFrom<Fault | undefined>(
        undefined,
        undefined,
        { status: 500 },
        { status: 503, headers: { "retry-after-ms": "50" } },
        { status: 400 },
        { delayMs: 300 },
      ),
      { numRuns: 40, seed },
    );
    await replayable(seed, async () => {
      const eventHubs = await startEventHubsEmulator({ hubName: "sef-crash", partitionCount: 2 });
      const logs = await startLogsIngestionEmulator();
      eventHubs.faults.planSends(ehFaults);
      for (const f of laFaults) logs.faults.failNext(1, f ?? {});
      const sim = await startSimulator({ scenario: "idle" });
      const dir = mkdtempSync(join(tmpdir(), "sef-ledger-crash-peers-"));
      const out = join(dir, "records.jsonl");
      const config = join(dir, "config.json");
      writeFileSync(
        config,
        JSON.stringify({
          eventhubs: { lingerMs: 0, maxRetries: 0, retryDelayMs: 50, tryTimeoutMs: 5000 },
          loganalytics: { endpoint: logs.endpoint, ruleId: logs.ruleId, caCertFile: logs.caCertPath, lingerMs: 0 },
        }),
      );
      const args = [
        "run",
        "--config",
        config,
        "--imds-url",
        sim.url,
        "--poll-interval-ms",
        "200",
        "--data-dir",
        join(dir, "data"),
        "--sink",
        "eventhubs",
        "--sink",
        "loganalytics",
        "--sink",
        `jsonl:${out}`,
        "--heartbeat-interval-ms",
        "0",
        "--metrics-port",
        "0",
      ];
      const env = {
        SEF_EVENTHUBS_CONNECTION_STRING: eventHubs.connectionString,
        AZURE_POD_IDENTITY_AUTHORITY_HOST: sim.url,
      };
      const ehIds = (): string[] => eventHubs.events().map((e) => String(e.messageId));
      const laIds = (): string[] => logs.rows().map((r) => String(r.RecordId));
      // What each peer accepted during each run (a run ends once its agent is dead and in-flight requests have landed).
      // The peers list what they hold, not in arrival order (the Event Hubs peer lists partition by partition), so a run's
      // share is what the peer holds now less what it held at the end of the previous run, counted per RecordId.
      const ehRuns: string[][] = [];
      const laRuns: string[][] = [];
      const newSince = (runs: string[][], ids: string[]): string[] => {
        const before = new Map<string, number>();
        for (const id of runs.flat()) before.set(id, (before.get(id) ?? 0) + 1);
        const added: string[] = [];
        for (const id of ids) {
          const left = before.get(id) ?? 0;
          if (left > 0) before.set(id, left - 1);
          else added.push(id);
        }
        return added;
      };
      const endRun = async (): Promise<void> => {
        // The dead agent's last frames are read once its connection to the Event Hubs peer is closed; a request the Log
        // Analytics peer holds under a 300 ms delay fault is stored when the delay ends, client gone or not.
        await waitUntil(
          () => eventHubs.stats.connectionsCurrent === 0,
          5000,
          "the Event Hubs peer saw the agent's connection close",
        );
        await new Promise((r) => setTimeout(r, 400));
        ehRuns.push(newSince(ehRuns, ehIds()));
        laRuns.push(newSince(laRuns, laIds()));
      };
      let agent: RunningProcess | undefined;
      const deadLetterFile = join(dir, "data", "dead-letter", "loganalytics.jsonl");
      const deadLettered = (): Array<{ reason: string; record: { RecordId: string } }> => readJsonl(deadLetterFile);
      try {
        for (const [i, delayMs] of killDelaysMs.entries()) {
          agent = runCli(args, { env });
          sim.setEvents(
            Array.from({ length: i + 1 }, (_, k) => ({
              EventId: `CAFE0000-0000-4000-8000-00000000000${k}`,
              EventType: "Freeze",
              Resources: ["WestNO_0"],
              notBeforeInSeconds: 600,
            })),
          );
          await new Promise((r) => setTimeout(r, delayMs));
          await agent.stop("SIGKILL");
          await endRun();
        }
        agent = runCli(args, { env });
        await waitUntil(
          () => {
            const ids = readJsonl<{ RecordId: string }>(out).map((r) => r.RecordId);
            const atEh = new Set(ehIds());
            const atLa = new Set([...laIds(), ...deadLettered().map((d) => d.record.RecordId)]);
            return ids.length >= killDelaysMs.length && ids.every((id) => atEh.has(id) && atLa.has(id));
          },
          30_000,
          `every record in the jsonl file at both peers; stderr:\n${agent.stderr().slice(-2000)}`,
        );
        await waitForMetricsUrl(agent);
        await new Promise((r) => setTimeout(r, 300));
        expect(await agent.stop("SIGTERM")).toBe(0);
        await endRun();
      } finally {
        await agent?.stop("SIGKILL");
        await sim.close();
        await eventHubs.close();
        await logs.close();
      }

      const committed = new Set(readJsonl<{ RecordId: string }>(out).map((r) => r.RecordId));
      expect(committed.size).toBeGreaterThanOrEqual(killDelaysMs.length);
      const dead = new Map(deadLettered().map((d) => [d.record.RecordId, d.reason]));
      for (const [name, runs] of [
        ["eventhubs", ehRuns],
        ["loganalytics", laRuns],
      ] as const) {
        const accepted = new Set(runs.flat());
        for (const id of committed) {
          // No record lost: at the peer, or (Log Analytics' injected 400s) dead-lettered with the reason.
          expect(accepted.has(id) || (name === "loganalytics" && dead.has(id)), `${name}: ${id} lost`).toBe(true);
        }
        for (const id of accepted)
          expect(committed.has(id), `${name}: ${id} at the peer but not in the jsonl file`).toBe(true);
        // Within one run a record the peer accepted is never sent again: a repeat only follows a kill, same RecordId.
        for (const [i, ids] of runs.entries())
          expect(ids.length, `${name}: run ${i} accepted a record twice: ${ids.join(",")}`).toBe(new Set(ids).size);
      }
      for (const [id, reason] of dead) {
        expect(reason.trim(), id).not.toBe("");
        expect(reason, id).toMatch(/HTTP 400/);
      }

      const status = runCli(["outbox", "status", "--data-dir", join(dir, "data"), "--json"]);
      expect(await status.exited, status.stderr()).toBe(0);
      const sinks = (
        JSON.parse(status.stdout()) as { sinks: Array<{ sink: string; pending: number; deadLettered: number }> }
      ).sinks;
      expect(sinks.map((s) => [s.sink.split(":")[0], s.pending, s.deadLettered])).toEqual([
        ["eventhubs", 0, 0],
        ["jsonl", 0, 0],
        ["loganalytics", 0, dead.size],
      ]);
    });
  }, 90_000);
});
