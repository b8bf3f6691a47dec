import { createServer, type IncomingMessage, type Server } from "node:http";
import { recordSource } from "../../src/contract/record-id.js";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { approveEvents, approvalRecordId, type ApprovalTarget } from "../../src/agent/actions/approval/approver.js";
import { startRequestPoster } from "./fixtures.js";
import { AgentMetrics } from "../../src/agent/observability/metrics.js";
import { silentLogger } from "../../src/agent/observability/logger.js";
import { FakeClock } from "../helpers/fake-clock.js";
import { vm } from "./fixtures.js";

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: string;
}

/** A tiny IMDS stand-in: validates like IMDS does (Metadata header, body shape) and records what it got. */
async function startImds(
  answer?: (seen: Seen) => { status: number; body: string } | "reset",
): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (c: string) => (body += c));
    req.on("end", () => {
      const s: Seen = { method: req.method ?? "", url: req.url ?? "", headers: req.headers, body };
      seen.push(s);
      const custom = answer?.(s);
      if (custom === "reset") {
        req.socket.destroy();
        return;
      }
      if (custom) {
        res.writeHead(custom.status, { "content-type": "application/json" }).end(custom.body);
        return;
      }
      if (req.headers["metadata"] !== "true") {
        res.writeHead(400).end(JSON.stringify({ error: "Required metadata header not specified" }));
        return;
      }
      try {
        const parsed = JSON.parse(body) as { StartRequests?: { EventId?: unknown }[] };
        const ok =
          Array.isArray(parsed.StartRequests) && parsed.StartRequests.every((r) => typeof r.EventId === "string");
        res.writeHead(ok ? 200 : 400).end(ok ? "" : JSON.stringify({ error: "Bad request" }));
      } catch {
        res.writeHead(400).end(JSON.stringify({ error: "Bad request" }));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  servers.push(server);
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

const target = (EventId: string): ApprovalTarget => ({
  EventId,
  EventType: "Freeze",
  EventStatus: "Scheduled",
  DocumentIncarnation: 3,
  reason: "rule 2 matches",
});

describe("approveEvents against a local IMDS", () => {
  it("POSTs StartRequests with Metadata: true and records Approved", async () => {
    const imds = await startImds();
    const post = startRequestPoster(imds.url + "/");
    const metrics = new AgentMetrics();
    const clock = new FakeClock(Date.UTC(2022, 3, 11, 22, 11));
    const records = await approveEvents([target("EVT-A"), target("evt-b")], {
      vm,
      mode: "on",
      postStartRequest: post,
      agentVersion: "0.1.0",
      logger: silentLogger(),
      metrics,
      clock,
    });
    await post.close();

    expect(imds.seen).toHaveLength(1);
    const req = imds.seen[0]!;
    expect(req.method).toBe("POST");
    expect(req.url).toBe("/metadata/scheduledevents?api-version=2020-07-01");
    expect(req.headers["metadata"]).toBe("true");
    expect(req.headers["x-forwarded-for"]).toBeUndefined();
    expect(JSON.parse(req.body)).toEqual({ StartRequests: [{ EventId: "EVT-A" }, { EventId: "evt-b" }] });

    expect(records).toHaveLength(2);
    expect(records[0]).toMatchObject({
      RecordType: "Approval",
      EventId: "EVT-A",
      EventType: "Freeze",
      EventStatus: "Scheduled",
      DocumentIncarnation: 3,
      Outcome: "Approved",
      HttpStatus: 200,
      VmName: "WestNO_0",
      VmId: vm.VmId,
      TimeGenerated: "2022-04-11T22:11:00.000Z",
      AgentVersion: "0.1.0",
    });
    expect(records[0]!.Detail).toContain("rule 2 matches");
    expect(records[0]!.RecordId).toBe(approvalRecordId(recordSource(vm), "evt-a", "Approved"));
    expect(await metrics.render()).toMatch(/^sef_approvals_total\{outcome="approved"\} 2$/m);
  });

  it("gives the same RecordId for the same event (any case), a different one per event", () => {
    expect(approvalRecordId("vm", "ABC", "Approved")).toBe(approvalRecordId("vm", "abc", "Approved"));
    expect(approvalRecordId("vm", "abc", "Approved")).not.toBe(approvalRecordId("vm", "abd", "Approved"));
    expect(approvalRecordId("vm", "abc", "Approved")).not.toBe(approvalRecordId("vm2", "abc", "Approved"));
    expect(approvalRecordId("vm", "abc", "Approved")).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
  });

  it("dry-run sends nothing and records DryRun with HttpStatus 0", async () => {
    const imds = await startImds();
    const metrics = new AgentMetrics();
    const post = startRequestPoster(imds.url);
    const records = await approveEvents([target("EVT-A")], {
      vm,
      mode: "dry-run",
      postStartRequest: post,
      agentVersion: "0.1.0",
      logger: silentLogger(),
      metrics,
    });
    await post.close();
    expect(imds.seen).toHaveLength(0);
    expect(records[0]).toMatchObject({ Outcome: "DryRun", HttpStatus: 0 });
    expect(await metrics.render()).toMatch(/^sef_approvals_total\{outcome="dry_run"\} 1$/m);
  });

  it("records Failed with the status and the body when IMDS refuses", async () => {
    const imds = await startImds(() => ({ status: 400, body: '{"error":"Bad request. StartRequests is invalid"}' }));
    const post = startRequestPoster(imds.url);
    const metrics = new AgentMetrics();
    const [record] = await approveEvents([target("EVT-A")], {
      vm,
      mode: "on",
      postStartRequest: post,
      agentVersion: "0.1.0",
      logger: silentLogger(),
      metrics,
    });
    await post.close();
    expect(record).toMatchObject({ Outcome: "Failed", HttpStatus: 400 });
    expect(record!.Detail).toContain("StartRequests is invalid");
    expect(record!.RecordId).not.toBe(approvalRecordId(recordSource(vm), "EVT-A", "Approved"));
    expect(await metrics.render()).toMatch(/^sef_approvals_total\{outcome="failed"\} 1$/m);
  });

  it("records Failed with HttpStatus 0 on a connection reset, and on a timeout", async () => {
    const reset = await startImds(() => "reset");
    const post = startRequestPoster(reset.url);
    const [r1] = await approveEvents([target("EVT-A")], {
      vm,
      mode: "on",
      postStartRequest: post,
      agentVersion: "0.1.0",
      logger: silentLogger(),
    });
    await post.close();
    expect(r1).toMatchObject({ Outcome: "Failed", HttpStatus: 0 });
    expect(r1!.Detail).toContain("approval request failed");

    const silent = createServer(() => undefined); // never answers
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    servers.push(silent);
    const slowPost = startRequestPoster(`http://127.0.0.1:${(silent.address() as AddressInfo).port}`, {
      firstCallTimeoutMs: 200,
    });
    const started = Date.now();
    const [r2] = await approveEvents([target("EVT-A")], {
      vm,
      mode: "on",
      postStartRequest: slowPost,
      agentVersion: "0.1.0",
      logger: silentLogger(),
    });
    silent.closeAllConnections();
    await slowPost.close();
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(r2).toMatchObject({ Outcome: "Failed", HttpStatus: 0 });
  });

  it("does not follow redirects", async () => {
    const paths: string[] = [];
    const redirecting = createServer((req, res) => {
      paths.push(req.url ?? "");
      res.writeHead(307, { location: "/elsewhere" }).end();
    });
    await new Promise<void>((resolve) => redirecting.listen(0, "127.0.0.1", resolve));
    servers.push(redirecting);
    const post = startRequestPoster(`http://127.0.0.1:${(redirecting.address() as AddressInfo).port}`);
    const [record] = await approveEvents([target("EVT-A")], {
      vm,
      mode: "on",
      postStartRequest: post,
      agentVersion: "0.1.0",
      logger: silentLogger(),
    });
    await post.close();
    expect(paths).toEqual(["/metadata/scheduledevents?api-version=2020-07-01"]);
    expect(record).toMatchObject({ Outcome: "Failed", HttpStatus: 307 });
  });

  it("returns nothing and sends nothing for no targets", async () => {
    let calls = 0;
    const records = await approveEvents([], {
      vm,
      mode: "on",
      postStartRequest: async () => {
        calls++;
        return { status: 200, body: "" };
      },
      agentVersion: "0.1.0",
      logger: silentLogger(),
    });
    expect(records).toEqual([]);
    expect(calls).toBe(0);
  });
});
