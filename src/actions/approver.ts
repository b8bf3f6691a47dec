// Approver (I/O): POSTs StartRequests to IMDS for events the policy approved and reports each attempt as an ApprovalRecord.
// The HTTP call is injected (`PostStartRequest`); the agent passes its IMDS client's rate-limited `postStartRequests`.
import type { Logger } from "pino";
import type { ApprovalRecord, EventStatus, RecordIdentity } from "../contract/record.js";
import { deterministicUuid, recordSource } from "../contract/record-id.js";
import type { AgentMetrics } from "../observability/metrics.js";
import { redactSecrets } from "../observability/logger.js";
import { systemClock, type Clock } from "../util/clock.js";

export interface StartRequestResponse {
  status: number;
  body: string;
}

/** Sends `{"StartRequests":[{"EventId":…},…]}` to IMDS; resolves with the HTTP answer, rejects on network failure or timeout. */
export type PostStartRequest = (eventIds: readonly string[], signal?: AbortSignal) => Promise<StartRequestResponse>;

const maxResponseBodyChars = 500;

/** What the approver needs to know about one event it approves. */
export interface ApprovalTarget {
  EventId: string;
  EventType: string;
  EventStatus: EventStatus;
  DocumentIncarnation: number;
  /** Why the policy approved it (goes into Detail). */
  reason: string;
}

export interface ApproverDeps {
  vm: RecordIdentity;
  /** "dry-run" sends nothing and yields DryRun records; "on" POSTs. */
  mode: "dry-run" | "on";
  postStartRequest: PostStartRequest;
  agentVersion: string;
  logger: Logger;
  metrics?: AgentMetrics;
  clock?: Clock;
  signal?: AbortSignal;
}

/**
 * RecordId of an approval attempt: deterministic from (VmId, lower-cased EventId, "Approval", Outcome), so an
 * approval (or a dry run, or a failure) of one event is recorded once even if a retry repeats it.
 */
export function approvalRecordId(vmId: string, eventId: string, outcome: ApprovalRecord["Outcome"]): string {
  return deterministicUuid(vmId, eventId.toLowerCase(), "Approval", outcome);
}

const metricOutcome: Record<ApprovalRecord["Outcome"], string> = { Approved: "approved", Failed: "failed", DryRun: "dry_run" };

/**
 * Approves `targets` with one POST (IMDS accepts several EventIds) and returns one ApprovalRecord per target.
 * Never throws for HTTP or network failures: they become `Failed` records (HttpStatus 0 for network errors).
 */
export async function approveEvents(targets: readonly ApprovalTarget[], deps: ApproverDeps): Promise<ApprovalRecord[]> {
  if (targets.length === 0) return [];
  const clock = deps.clock ?? systemClock;
  const eventIds = targets.map((t) => t.EventId);
  let outcome: ApprovalRecord["Outcome"];
  let httpStatus = 0;
  let detail: string;
  if (deps.mode === "dry-run") {
    outcome = "DryRun";
    detail = "dry-run: would approve";
  } else {
    try {
      const response = await deps.postStartRequest(eventIds, deps.signal);
      httpStatus = response.status;
      if (response.status >= 200 && response.status < 300) {
        outcome = "Approved";
        detail = "approved";
      } else {
        outcome = "Failed";
        detail = `IMDS answered HTTP ${response.status}: ${truncate(response.body, maxResponseBodyChars)}`;
      }
    } catch (err) {
      outcome = "Failed";
      detail = `approval request failed: ${errorText(err)}`;
    }
  }
  const timeGenerated = new Date(clock.now()).toISOString();
  const records = targets.map(
    (t): ApprovalRecord => ({
      ...deps.vm,
      RecordId: approvalRecordId(recordSource(deps.vm), t.EventId, outcome),
      RecordType: "Approval",
      TimeGenerated: timeGenerated,
      EventId: t.EventId,
      EventType: t.EventType,
      EventStatus: t.EventStatus,
      DocumentIncarnation: t.DocumentIncarnation,
      Outcome: outcome,
      HttpStatus: httpStatus,
      Detail: `${detail} (${t.reason})`,
      AgentVersion: deps.agentVersion,
    }),
  );
  deps.metrics?.approvals.inc({ outcome: metricOutcome[outcome] }, targets.length);
  const log = { eventIds, outcome, httpStatus };
  if (outcome === "Failed") deps.logger.warn({ ...log, detail }, "approval failed");
  else deps.logger.info(log, outcome === "DryRun" ? "approval dry run: would approve" : "approved events");
  return records;
}

function truncate(text: string, maxChars: number): string {
  const oneLine = text.replace(/\s+/g, " ").trim();
  return oneLine.length <= maxChars ? oneLine : `${oneLine.slice(0, maxChars)}…`;
}

function errorText(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return redactSecrets(`${err.name}: ${err.message}${typeof code === "string" ? ` (${code})` : ""}`);
  }
  return redactSecrets(String(err));
}
