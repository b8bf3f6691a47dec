// An IMDS that sends its headers at once and then the body one byte at a time (each byte well within undici's
// per-byte body timeout) must not hold a poll forever: the built agent gives each request one total deadline.
import { describe, expect, it } from "vitest";
import { createServer, type ServerResponse } from "node:http";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AddressInfo } from "node:net";
import { runCli, waitUntil } from "../helpers/agent-process.js";

const requestTimeoutMs = 1500;
const byteEveryMs = 400;

describe("IMDS total request deadline", () => {
  it("fails a poll whose body trickles in past the deadline, and polls again", async () => {
    let scheduledEventsRequests = 0;
    const trickling = new Set<ServerResponse>();
    /** Bytes of the body each trickled answer had sent when the agent closed it. */
    const bytesAtClose: number[] = [];
    const imds = createServer((req, res) => {
      if (!req.url?.startsWith("/metadata/scheduledevents")) {
        res.writeHead(404).end();
        return;
      }
      scheduledEventsRequests += 1;
      const body = JSON.stringify({ DocumentIncarnation: 1, Events: [] });
      if (scheduledEventsRequests === 1) {
        res.writeHead(200, { "content-type": "application/json" }).end(body); // the first call answers: later ones use the short deadline
        return;
      }
      res.writeHead(200, { "content-type": "application/json", "content-length": String(body.length + 10_000) });
      trickling.add(res);
      let sent = 0;
      const timer = setInterval(() => {
        if (res.destroyed || sent >= body.length) return clearInterval(timer);
        res.write(body[sent++]!);
      }, byteEveryMs);
      res.on("close", () => {
        bytesAtClose.push(sent);
        clearInterval(timer);
        trickling.delete(res);
      });
    });
    await new Promise<void>((r) => imds.listen(0, "127.0.0.1", r));
    const dir = mkdtempSync(join(tmpdir(), "sef-imds-deadline-"));
    const config = join(dir, "config.json");
    writeFileSync(
      config,
      JSON.stringify({
        imdsUrl: `http://127.0.0.1:${(imds.address() as AddressInfo).port}`,
        pollIntervalMs: 200,
        imdsRequestTimeoutMs: requestTimeoutMs,
        dataDir: join(dir, "data"),
        sinks: ["stdout"],
        heartbeatIntervalMs: 0,
        metricsPort: 0,
      }),
    );
    const agent = runCli(["run", "--config", config]);
    try {
      await waitUntil(() => scheduledEventsRequests >= 2, 15_000, "a second poll");
      await waitUntil(
        () => agent.stderr().includes(`did not complete within ${requestTimeoutMs} ms`),
        3 * requestTimeoutMs,
        "the deadline to end the poll",
      );
      // Counted in the peer's bytes, not timed: the deadline cut the answer off after about requestTimeoutMs /
      // byteEveryMs bytes (~4), far short of the 40-byte body a per-read timeout would have let through in full.
      await waitUntil(() => bytesAtClose.length > 0, 5000, "the agent to close the stalled answer");
      expect(bytesAtClose[0]).toBeLessThan(20);
      // The agent tries again (a new request), rather than waiting on the stalled one.
      await waitUntil(() => scheduledEventsRequests >= 3, 5000, "the next request");
      expect(await agent.stop("SIGTERM")).toBe(0);
    } finally {
      await agent.stop("SIGKILL");
      for (const res of trickling) res.destroy();
      imds.closeAllConnections();
      await new Promise((r) => imds.close(r));
    }
  });
});
