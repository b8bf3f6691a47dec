// Approver (I/O): POSTs StartRequests to IMDS for events the policy approved and reports each attempt as an ApprovalRecord.
// The HTTP call is injected (`PostStartRequest`); the agent passes its IMDS client's rate-limited `postStartRequests`.
import type { Logger } from "pino";
import {
  buildRecord,
  type ApprovalRecord,
  type EventStatus,
  type RecordIdentity,
  type RecordOrigin,
} from "@sef/contract/record.js";
import { deterministicUuid } from "@sef/contract/record-id.js";
import type { AgentMetrics } from "../../observability/metrics.js";
import { redactSecrets } from "../../observability/logger.js";
import { systemClock, type Clock } from "@sef/runtime/clock.js";
import { SefError } from "@sef/errors/sef-error.js";
import type { PostStartRequest } from "../action.js";

export type { PostStartRequest, StartRequestResponse } from "../action.js";

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

/** What an attempt can end in (an interrupted approval is reported, and counted, by the approval action). */
type AttemptOutcome = Exclude<ApprovalRecord["Outcome"], "Interrupted">;

const metricOutcome: Record<AttemptOutcome, string> = {
  Approved: "approved",
  Failed: "failed",
  DryRun: "dry_run",
};

/**
 * What became of the POST: `approved` (2xx); `refused` (IMDS answered otherwise: it did not start the event, a new
 * POST may follow); `not-sent` (the connection was never made); `unknown` (timeout, reset, abort: it may have been
 * taken, so it must not be sent again); `dry-run`.
 */
export type ApprovalDelivery = "approved" | "refused" | "not-sent" | "unknown" | "dry-run";

export interface ApprovalAttempt {
  records: ApprovalRecord[];
  delivery: ApprovalDelivery;
}

/** Network failures that prove the request never reached IMDS (nothing was sent). */
const notSentPattern = /\b(ECONNREFUSED|ENOTFOUND|EHOSTUNREACH|ENETUNREACH|EAI_AGAIN)\b/;

/**
 * Approves `targets` with one POST (IMDS accepts several EventIds) and returns one ApprovalRecord per target.
 * Never throws for HTTP or network failures: they become `Failed` records (HttpStatus 0 for network errors).
 */
export async function approveEvents(targets: readonly ApprovalTarget[], deps: ApproverDeps): Promise<ApprovalRecord[]> {
  return (await attemptApproval(targets, deps)).records;
}

/** `approveEvents`, also saying whether the POST certainly did or did not reach IMDS (see `ApprovalDelivery`). */
export async function attemptApproval(
  targets: readonly ApprovalTarget[],
  deps: ApproverDeps,
): Promise<ApprovalAttempt> {
  if (targets.length === 0) return { records: [], delivery: deps.mode === "dry-run" ? "dry-run" : "not-sent" };
  const clock = deps.clock ?? systemClock;
  const eventIds = targets.map((t) => t.EventId);
  let outcome: AttemptOutcome;
  let delivery: ApprovalDelivery;
  let httpStatus = 0;
  let detail: string;
  if (deps.mode === "dry-run") {
    outcome = "DryRun";
    delivery = "dry-run";
    detail = "dry-run: would approve";
  } else {
    try {
      const response = await deps.postStartRequest(eventIds, deps.signal);
      httpStatus = response.status;
      if (response.status >= 200 && response.status < 300) {
        outcome = "Approved";
        delivery = "approved";
        detail = "approved";
      } else {
        outcome = "Failed";
        delivery = "refused";
        detail = `IMDS answered HTTP ${response.status}: ${truncate(response.body, maxResponseBodyChars)}`;
      }
    } catch (err) {
      outcome = "Failed";
      const text = errorText(err);
      delivery = notSentPattern.test(text) ? "not-sent" : "unknown";
      detail = `approval request failed: ${text}${delivery === "unknown" ? "; IMDS may have taken it, so it is not sent again" : ""}`;
    }
  }
  const nowMs = clock.now();
  const records = targets.map((t) =>
    approvalRecord(deps, nowMs, t, { Outcome: outcome, HttpStatus: httpStatus, Detail: `${detail} (${t.reason})` }),
  );
  deps.metrics?.approvals.inc({ outcome: metricOutcome[outcome] }, targets.length);
  const log = { eventIds, outcome, httpStatus };
  if (outcome === "Failed") deps.logger.warn({ ...log, detail }, "approval failed");
  else deps.logger.info(log, outcome === "DryRun" ? "approval dry run: would approve" : "approved events");
  return { records, delivery };
}

/**
 * The report for an approval whose POST was in flight when the agent died or stopped: Outcome Interrupted, HttpStatus 0.
 * Its outcome is unknown, so it is never sent again (see README.md in this folder, "Actions are persisted").
 */
export function interruptedApprovalRecord(
  target: Omit<ApprovalTarget, "reason">,
  vm: RecordIdentity,
  detail: string,
  nowMs: number,
  agentVersion: string,
): ApprovalRecord {
  return approvalRecord({ vm, agentVersion }, nowMs, target, { Outcome: "Interrupted", HttpStatus: 0, Detail: detail });
}

/** An ApprovalRecord of `target` (one record per event of an attempt); RecordId from its EventId and Outcome. */
function approvalRecord(
  origin: RecordOrigin,
  nowMs: number,
  target: Omit<ApprovalTarget, "reason">,
  result: Pick<ApprovalRecord, "Outcome" | "HttpStatus" | "Detail">,
): ApprovalRecord {
  const recordId = (source: string): string => approvalRecordId(source, target.EventId, result.Outcome);
  return buildRecord<ApprovalRecord>(origin, nowMs, recordId, {
    RecordType: "Approval",
    EventId: target.EventId,
    EventType: target.EventType,
    EventStatus: target.EventStatus,
    DocumentIncarnation: target.DocumentIncarnation,
    ...result,
  });
}

function truncate(text: string, maxChars: number): string {
  const oneLine = text.replace(/\s+/g, " ").trim();
  return oneLine.length <= maxChars ? oneLine : `${oneLine.slice(0, maxChars)}…`;
}

function errorText(err: unknown): string {
  if (err instanceof Error) {
    // A system error's code (ECONNREFUSED) says what happened; a SefError's class code is already in its name.
    const code = err instanceof SefError ? undefined : (err as { code?: unknown }).code;
    return redactSecrets(`${err.name}: ${err.message}${typeof code === "string" ? ` (${code})` : ""}`);
  }
  return redactSecrets(String(err));
}
