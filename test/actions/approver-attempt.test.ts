// The approver's decisions in-process (approver.ts, the POST injected): what each answer or failure of the POST
// becomes (Outcome, HttpStatus, delivery: approved, refused, not-sent, unknown, dry-run), the Detail it writes (the
// answer's body on one line, cut at 500 characters; the error's name, message and code), the metric, the log line, and
// the report of an approval interrupted in flight. Against a real HTTP peer: approver.test.ts, approver-simulator.test.ts.
import { capturingLogger } from "../helpers/capturing-logger.js";
import { describe, expect, it } from "vitest";
import { deterministicUuid, recordSource } from "../../src/contract/record-id.js";
import {
  approvalRecordId,
  attemptApproval,
  interruptedApprovalRecord,
  type ApprovalTarget,
  type ApproverDeps,
  type PostStartRequest,
} from "../../src/agent/actions/approval/approver.js";
import { AgentMetrics } from "../../src/agent/observability/metrics.js";
import { SefError } from "../../src/errors/sef-error.js";
import { FakeClock } from "../helpers/fake-clock.js";
import { vm } from "./fixtures.js";

const target = (EventId: string, reason = "rule 1 matches"): ApprovalTarget => ({
  EventId,
  EventType: "Reboot",
  EventStatus: "Scheduled",
  DocumentIncarnation: 7,
  reason,
});

interface Harness {
  deps: ApproverDeps;
  lines: Array<Record<string, unknown>>;
  metrics: AgentMetrics;
  posts: Array<{ eventIds: readonly string[]; signal: AbortSignal | undefined }>;
}

function harness(answer: () => Promise<{ status: number; body: string }>, mode: "on" | "dry-run" = "on"): Harness {
  const { logger, lines } = capturingLogger();
  const metrics = new AgentMetrics();
  const posts: Harness["posts"] = [];
  const postStartRequest: PostStartRequest = async (eventIds, signal) => {
    posts.push({ eventIds, signal });
    return answer();
  };
  const deps: ApproverDeps = {
    vm,
    mode,
    postStartRequest,
    agentVersion: "9.9.9",
    logger,
    metrics,
    clock: new FakeClock(Date.UTC(2026, 11, 7, 16, 0)),
    signal: new AbortController().signal,
  };
  return { deps, lines, metrics, posts };
}

const networkError = (code: string, message: string): Error => Object.assign(new Error(message), { code });
const approvals = async (metrics: AgentMetrics, outcome: string): Promise<number> => {
  const line = (await metrics.render())
    .split("\n")
    .find((l) => l.startsWith(`sef_approvals_total{outcome="${outcome}"} `));
  return Number(line?.split(" ")[1]);
};

describe("attemptApproval: what the POST's answer becomes", () => {
  it("a 2xx approves every target, with one record each, the metric by their number and one info line", async () => {
    for (const status of [200, 204, 299]) {
      const h = harness(async () => ({ status, body: "" }));
      const { records, delivery } = await attemptApproval([target("EVT-A"), target("evt-b", "rule 2")], h.deps);
      expect(delivery).toBe("approved");
      expect(h.posts.map((p) => p.eventIds)).toEqual([["EVT-A", "evt-b"]]);
      expect(h.posts[0]!.signal).toBe(h.deps.signal);
      expect(records).toEqual([
        {
          ...vm,
          RecordId: approvalRecordId(recordSource(vm), "EVT-A", "Approved"),
          RecordType: "Approval",
          TimeGenerated: "2026-12-07T16:00:00.000Z",
          ObservedAt: "2026-12-07T16:00:00.000Z",
          EventId: "EVT-A",
          EventType: "Reboot",
          EventStatus: "Scheduled",
          DocumentIncarnation: 7,
          Outcome: "Approved",
          HttpStatus: status,
          Detail: "approved (rule 1 matches)",
          AgentVersion: "9.9.9",
        },
        expect.objectContaining({ EventId: "evt-b", Outcome: "Approved", Detail: "approved (rule 2)" }),
      ]);
      expect(await approvals(h.metrics, "approved")).toBe(2);
      expect(h.lines.map((l) => [l.level, l.msg, l.eventIds, l.outcome, l.httpStatus])).toEqual([
        [30, "approved events", ["EVT-A", "evt-b"], "Approved", status],
      ]);
    }
  });

  it("any other status is refused: Failed, the body on one line in the Detail (cut at 500 characters), a warning", async () => {
    for (const status of [199, 300, 409, 500]) {
      const h = harness(async () => ({ status, body: "  bad\n\n request\t here " }));
      const { records, delivery } = await attemptApproval([target("EVT-A")], h.deps);
      expect(delivery).toBe("refused");
      expect(records[0]).toMatchObject({ Outcome: "Failed", HttpStatus: status });
      const detail = `IMDS answered HTTP ${status}: bad request here`;
      expect(records[0]!.Detail).toBe(`${detail} (rule 1 matches)`);
      expect(await approvals(h.metrics, "failed")).toBe(1);
      expect(h.lines).toEqual([
        expect.objectContaining({ level: 40, msg: "approval failed", outcome: "Failed", httpStatus: status, detail }),
      ]);
    }
    const exact = harness(async () => ({ status: 400, body: "x".repeat(500) }));
    const kept = (await attemptApproval([target("E")], exact.deps)).records[0]!.Detail;
    expect(kept).toBe(`IMDS answered HTTP 400: ${"x".repeat(500)} (rule 1 matches)`);
    const long = harness(async () => ({ status: 400, body: "y".repeat(501) }));
    const cut = (await attemptApproval([target("E")], long.deps)).records[0]!.Detail;
    expect(cut).toBe(`IMDS answered HTTP 400: ${"y".repeat(500)}… (rule 1 matches)`);
  });

  it("a connection never made is not-sent; any other failure unknown (never sent again); HttpStatus 0", async () => {
    for (const code of ["ECONNREFUSED", "ENOTFOUND", "EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN"]) {
      const h = harness(async () => Promise.reject(networkError(code, `connect ${code} 169.254.169.254:80`)));
      const { records, delivery } = await attemptApproval([target("EVT-A")], h.deps);
      expect(delivery, code).toBe("not-sent");
      expect(records[0]).toMatchObject({
        Outcome: "Failed",
        HttpStatus: 0,
        Detail: `approval request failed: Error: connect ${code} 169.254.169.254:80 (${code}) (rule 1 matches)`,
      });
    }
    const reset = harness(async () => Promise.reject(networkError("ECONNRESET", "socket hang up")));
    const attempt = await attemptApproval([target("EVT-A")], reset.deps);
    expect(attempt.delivery).toBe("unknown");
    expect(attempt.records[0]!.Detail).toBe(
      "approval request failed: Error: socket hang up (ECONNRESET); IMDS may have taken it, so it is not sent again (rule 1 matches)",
    );
    expect(reset.lines).toEqual([expect.objectContaining({ level: 40, msg: "approval failed", httpStatus: 0 })]);
    // A word that only contains a code's letters is not one, whichever end it is glued at.
    for (const word of ["XECONNREFUSEDX", "XECONNREFUSED", "ECONNREFUSEDX"]) {
      const lookalike = harness(async () => Promise.reject(new Error(`connect ${word} 169.254.169.254:80`)));
      expect((await attemptApproval([target("E")], lookalike.deps)).delivery, word).toBe("unknown");
    }
  });

  it("a SefError's code is not repeated; a thrown non-Error is written as it is", async () => {
    class ImdsDown extends SefError {
      override readonly name = "ImdsDown";
      override readonly code = "SEF_ERR_IMDS_DOWN";
    }
    const sef = harness(async () => Promise.reject(new ImdsDown("IMDS did not answer")));
    const detail = (await attemptApproval([target("E")], sef.deps)).records[0]!.Detail;
    expect(detail).toMatch(/^approval request failed: ImdsDown: IMDS did not answer; IMDS may have taken it/);
    expect(detail).not.toContain("SEF_ERR_IMDS_DOWN");
    const numeric = harness(async () => Promise.reject(Object.assign(new Error("odd"), { code: 42 })));
    expect((await attemptApproval([target("E")], numeric.deps)).records[0]!.Detail).toMatch(
      /^approval request failed: Error: odd; IMDS/,
    );
    const text = harness(async () => Promise.reject("plain words"));
    expect((await attemptApproval([target("E")], text.deps)).records[0]!.Detail).toMatch(
      /^approval request failed: plain words; IMDS/,
    );
  });

  it("dry-run posts nothing: DryRun records, the dry_run metric, an info line", async () => {
    const h = harness(async () => ({ status: 200, body: "" }), "dry-run");
    const { records, delivery } = await attemptApproval([target("EVT-A")], h.deps);
    expect(delivery).toBe("dry-run");
    expect(h.posts).toEqual([]);
    expect(records[0]).toMatchObject({
      Outcome: "DryRun",
      HttpStatus: 0,
      Detail: "dry-run: would approve (rule 1 matches)",
      RecordId: approvalRecordId(recordSource(vm), "EVT-A", "DryRun"),
    });
    expect(await approvals(h.metrics, "dry_run")).toBe(1);
    expect(h.lines.map((l) => [l.level, l.msg])).toEqual([[30, "approval dry run: would approve"]]);
  });

  it("no targets: nothing posted, nothing said; delivery not-sent (on) or dry-run", async () => {
    const on = harness(async () => ({ status: 200, body: "" }));
    expect(await attemptApproval([], on.deps)).toEqual({ records: [], delivery: "not-sent" });
    const dry = harness(async () => ({ status: 200, body: "" }), "dry-run");
    expect(await attemptApproval([], dry.deps)).toEqual({ records: [], delivery: "dry-run" });
    expect([...on.posts, ...dry.posts, ...on.lines, ...dry.lines]).toEqual([]);
  });
});

describe("approvalRecordId", () => {
  it("is the name-based UUID of (source, lower-cased EventId, Approval, Outcome), as the contract defines RecordIds", () => {
    const source = recordSource(vm);
    expect(approvalRecordId(source, "EVT-A", "Approved")).toBe(
      deterministicUuid(source, "evt-a", "Approval", "Approved"),
    );
    expect(approvalRecordId(source, "evt-a", "Failed")).toBe(deterministicUuid(source, "evt-a", "Approval", "Failed"));
  });
});

describe("interruptedApprovalRecord", () => {
  it("reports the approval in flight at a stop or crash: Interrupted, HttpStatus 0, its own RecordId", () => {
    const nowMs = Date.UTC(2026, 11, 7, 16, 30);
    const { reason: _reason, ...event } = target("EVT-A");
    expect(interruptedApprovalRecord(event, vm, "the agent stopped", nowMs, "9.9.9")).toEqual({
      ...vm,
      RecordId: approvalRecordId(recordSource(vm), "evt-a", "Interrupted"),
      RecordType: "Approval",
      TimeGenerated: "2026-12-07T16:30:00.000Z",
      ObservedAt: "2026-12-07T16:30:00.000Z",
      EventId: "EVT-A",
      EventType: "Reboot",
      EventStatus: "Scheduled",
      DocumentIncarnation: 7,
      Outcome: "Interrupted",
      HttpStatus: 0,
      Detail: "the agent stopped",
      AgentVersion: "9.9.9",
    });
  });
});
