// Shutdown is bounded: SIGTERM while the Event Hubs peer (a child process) is frozen with SIGSTOP, with the record's send
// waiting in the peer's socket, ends the built agent within shutdownFlushMs + a small margin, exit 0, with the
// undelivered record kept in the outbox; SIGTERM during
// start-up is a clean exit 0, not a death by signal.
import { describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AddressInfo } from "node:net";
import { DatabaseSync } from "node:sqlite";
import { startSimulator } from "../../src/testbed/simulator/server.js";
import { waitForMetricsUrl, runCli, testbedCliPath, waitUntil } from "../helpers/agent-process.js";

const shutdownFlushMs = 1000;
const marginMs = 3000;

/**
 * Bytes waiting unread in the receive queues of the TCP connections accepted on 127.0.0.1:`port` (/proc/net/tcp): what
 * clients sent a peer that is not reading (frozen), as its own socket holds it.
 */
function unreadBytesAt(port: number): number {
  let total = 0;
  for (const line of readFileSync("/proc/net/tcp", "utf8").trim().split("\n").slice(1)) {
    const [, local, , state, queues] = line.trim().split(/\s+/);
    const established = state === "01";
    if (established && parseInt(local!.split(":")[1]!, 16) === port) total += parseInt(queues!.split(":")[1]!, 16);
  }
  return total;
}

async function sentTo(metricsUrl: string, sink: string): Promise<number> {
  const text = await (await fetch(metricsUrl)).text();
  const line = text.split("\n").find((l) => l.startsWith(`sef_sink_sent_total{sink="${sink}"}`));
  return line ? Number(line.split(" ")[1]) : 0;
}

describe("bounded shutdown", () => {
  it("ends within shutdownFlushMs + margin while the Event Hubs peer is frozen, keeping the record in the outbox", async () => {
    const peer = spawn(
      process.execPath,
      [testbedCliPath, "emulate", "eventhubs", "--port", "0", "--hub", "scheduled-events", "--partitions", "2"],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let peerOut = "";
    peer.stdout.on("data", (c: Buffer) => (peerOut += c.toString()));
    const sim = await startSimulator({ scenario: "idle" });
    const dir = mkdtempSync(join(tmpdir(), "sef-shutdown-"));
    let agent: ReturnType<typeof runCli> | undefined;
    try {
      await waitUntil(() => /listening on amqp:\/\/127\.0\.0\.1:\d+/.test(peerOut), 15_000, "the Event Hubs peer");
      const port = /listening on amqp:\/\/127\.0\.0\.1:(\d+)/.exec(peerOut)![1];
      const connectionString = `Endpoint=sb://127.0.0.1:${port};SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;EntityPath=scheduled-events;UseDevelopmentEmulator=true`;
      const config = join(dir, "config.json");
      writeFileSync(
        config,
        JSON.stringify({
          imdsUrl: sim.url,
          pollIntervalMs: 200,
          dataDir: join(dir, "data"),
          sinks: ["eventhubs"],
          heartbeatIntervalMs: 3_600_000,
          metricsPort: 0,
          shutdownFlushMs,
          eventhubs: { lingerMs: 0 },
        }),
      );
      agent = runCli(["run", "--config", config], { env: { SEF_EVENTHUBS_CONNECTION_STRING: connectionString } });
      const metricsUrl = `${await waitForMetricsUrl(agent)}/metrics`;
      // The start-up heartbeat went through: the connection is up. Then the hub freezes.
      await expect.poll(() => sentTo(metricsUrl, "eventhubs"), { timeout: 15_000 }).toBeGreaterThanOrEqual(1);
      peer.kill("SIGSTOP");
      const unreadBefore = unreadBytesAt(Number(port));
      const eventId = "5407D0E0-0000-4000-8000-000000000001";
      sim.setEvents([{ EventId: eventId, EventType: "Reboot", Resources: ["WestNO_0"], notBeforeInSeconds: 300 }]);
      await waitUntil(() => agent!.stderr().includes("transitions recorded"), 10_000, "the record to be committed");
      // The send is under way: the record's transfer (its JSON alone is over a kilobyte) waits in the frozen peer's socket.
      await waitUntil(
        () => unreadBytesAt(Number(port)) - unreadBefore >= 1024,
        10_000,
        "the record's transfer at the frozen peer",
      );

      const startedMs = performance.now();
      expect(await agent.stop("SIGTERM")).toBe(0);
      expect(performance.now() - startedMs).toBeLessThan(shutdownFlushMs + marginMs + 500);

      const db = new DatabaseSync(join(dir, "data", "sef.db"), { readOnly: true });
      const row = db.prepare("SELECT seq FROM outbox WHERE json LIKE ?").get(`%${eventId}%`) as
        { seq: number } | undefined;
      const delivery = row
        ? (db.prepare("SELECT state FROM deliveries WHERE sink = 'eventhubs' AND seq = ?").get(row.seq) as
            { state: string } | undefined)
        : undefined;
      db.close();
      expect(row, "the record is still in the outbox").toBeDefined();
      expect(delivery?.state, "still pending for the Event Hubs sink").toBe("pending");
    } finally {
      await agent?.stop("SIGKILL");
      peer.kill("SIGCONT");
      peer.kill("SIGKILL");
      await sim.close();
    }
  });

  it("exits 0 on SIGTERM during start-up", async () => {
    // An IMDS that never answers holds start-up (the agent waits a few seconds for the VM identity).
    const silent = createServer(() => undefined);
    await new Promise<void>((r) => silent.listen(0, "127.0.0.1", r));
    const dir = mkdtempSync(join(tmpdir(), "sef-startup-stop-"));
    const agent = runCli([
      "run",
      "--imds-url",
      `http://127.0.0.1:${(silent.address() as AddressInfo).port}`,
      "--data-dir",
      join(dir, "data"),
      "--sink",
      "stdout",
      "--metrics-port",
      "0",
    ]);
    try {
      await waitUntil(() => agent.stderr().includes("agent starting"), 15_000, "start-up to begin");
      const startedMs = performance.now();
      expect(await agent.stop("SIGTERM")).toBe(0);
      expect(performance.now() - startedMs).toBeLessThan(marginMs);
    } finally {
      await agent.stop("SIGKILL");
      silent.closeAllConnections();
      await new Promise((r) => silent.close(r));
    }
  });
});
