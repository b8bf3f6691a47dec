// The scheduled-events route of the simulated IMDS: GET serves the timeline's document (or the fault the scenario
// plans for this request); POST StartRequests approves events (optionally held first, test-only).
import type { IncomingMessage, ServerResponse } from "node:http";
import { z } from "zod";
import type { ScheduledEventsApiVersion } from "../api-versions.js";
import { hugeBody, malformedBody, malformedVariants } from "../document.js";
import { HttpError, readJsonBody, sendDocument, sendJson, sendText } from "../http.js";
import type { Fault } from "../scenario-schema.js";
import { currentDocument, logChanges, startTimeline, sync, type SimState } from "../sim-state.js";

export const defaultHugeBodyBytes = 8 * 1024 * 1024;
export const defaultSlowDelaySeconds = 120;

const startRequestsSchema = z.object({
  StartRequests: z.array(z.object({ EventId: z.string().min(1) })).min(1),
  DocumentIncarnation: z.number().int().optional(),
});

export async function serveScheduledEvents(
  state: SimState,
  req: IncomingMessage,
  res: ServerResponse,
  apiVersion: ScheduledEventsApiVersion,
  nowMs: number,
): Promise<string> {
  startTimeline(state, nowMs);
  if (req.method === "POST") return approve(state, req, res, nowMs);
  const fault = state.timeline.takeFault(nowMs);
  if (fault) return serveFault(state, fault, res, req, apiVersion);
  return sendDocument(req, res, currentDocument(state, apiVersion));
}

async function approve(state: SimState, req: IncomingMessage, res: ServerResponse, nowMs: number): Promise<string> {
  const { clock, timeline, logger } = state;
  const body = await readJsonBody(req, startRequestsSchema, "StartRequests body");
  const ids = body.StartRequests.map((r) => r.EventId);
  const held = await holdApproval(state, ids);
  if (held === "closed") {
    req.socket.destroy();
    return "reset";
  }
  const appliedMs = held === "held" ? clock.now() : nowMs;
  const outcomes = timeline.approve(ids, appliedMs);
  ids.forEach((id, index) => {
    const count = (state.approvalCounts.get(id) ?? 0) + 1;
    state.approvalCounts.set(id, count);
    const outcome = outcomes[index] ?? "unknown";
    state.approvals.push({ EventId: id, at: new Date(appliedMs).toISOString(), atMs: appliedMs, outcome, count });
    logger.info({ eventId: id, outcome, count }, "approval received");
  });
  logChanges(
    state,
    timeline
      .changes()
      .filter((c) => c.atMs === appliedMs && c.cause === "approval")
      .slice(-1),
  );
  const unknown = ids.filter((_id, index) => outcomes[index] === "unknown");
  if (unknown.length > 0) throw new HttpError(400, { error: `Bad request. Unknown EventId: ${unknown.join(", ")}` });
  res.writeHead(200, { "Content-Length": 0 });
  res.end();
  return "200";
}

/** Waits `approvalDelayMs` (test-only); says whether it held the request, or that the simulator closed meanwhile. */
async function holdApproval(state: SimState, ids: readonly string[]): Promise<"not-held" | "held" | "closed"> {
  const delayMs = state.approvalDelayMs;
  if (delayMs <= 0) return "not-held";
  state.approvalsHeld += 1;
  state.logger.info({ eventIds: ids, delayMs }, "approval received; holding it (approvalDelayMs)");
  try {
    await state.clock.sleep(delayMs, state.lifetime.signal);
    return "held";
  } catch {
    return "closed";
  } finally {
    state.approvalsHeld -= 1;
  }
}

function faultLabel(fault: Fault): string {
  return fault.kind === "status" ? `status:${fault.status}` : fault.kind;
}

async function serveFault(
  state: SimState,
  fault: Fault,
  res: ServerResponse,
  req: IncomingMessage,
  apiVersion: ScheduledEventsApiVersion,
): Promise<string> {
  const label = faultLabel(fault);
  state.faultsServed[label] = (state.faultsServed[label] ?? 0) + 1;
  state.logger.debug({ fault: label }, "serving fault");
  switch (fault.kind) {
    case "status": {
      const headers: Record<string, string> =
        fault.retryAfterSeconds === undefined ? {} : { "Retry-After": String(fault.retryAfterSeconds) };
      const error =
        fault.status === 429
          ? "Too many requests"
          : fault.status === 410
            ? "Gone"
            : fault.status >= 500
              ? "Internal server error"
              : "Error";
      sendJson(res, fault.status, { error }, headers);
      return String(fault.status);
    }
    case "malformed-json": {
      const variant =
        fault.variant === undefined || fault.variant === "rotate"
          ? malformedVariants[state.malformedRotation++ % malformedVariants.length]!
          : fault.variant;
      sendText(res, 200, malformedBody(currentDocument(state, apiVersion), variant));
      return "200";
    }
    case "malformed-event": {
      const document = currentDocument(state, apiVersion);
      sendJson(res, 200, { ...document, Events: [...document.Events, fault.event] });
      return "200";
    }
    case "huge-body": {
      const size = fault.sizeBytes ?? defaultHugeBodyBytes;
      const document = currentDocument(state, apiVersion);
      const key = `${apiVersion}/${size}/${JSON.stringify(document)}`;
      if (state.hugeCache?.key !== key) state.hugeCache = { key, body: hugeBody(document, size) };
      sendText(res, 200, state.hugeCache.body);
      return "200";
    }
    case "slow": {
      const delayMs = fault.delayMs ?? state.timeline.wallMs(fault.delaySeconds ?? defaultSlowDelaySeconds);
      try {
        await state.clock.sleep(delayMs, state.lifetime.signal);
      } catch {
        req.socket.destroy();
        return "reset";
      }
      sync(state, state.clock.now());
      return sendDocument(req, res, currentDocument(state, apiVersion));
    }
    case "reset":
      req.socket.destroy();
      return "reset";
  }
}
