// Local peers for the notification targets' HTTP APIs, on one server: a Teams Workflows/incoming webhook (Adaptive
// Card message, 28 KB), a Slack incoming webhook (Block Kit, `ok`), the PagerDuty Events API v2 (`/v2/enqueue`, with
// incidents deduplicated by dedup_key as PagerDuty documents it) and a generic signed webhook (recording each
// Idempotency-Key). It records every request, validates the documented payload shape and size limits, and injects
// 429/5xx/timeouts on demand.
import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { listen } from "@sef/runtime/listen.js";

export type NotifyKind = "teams" | "slack" | "pagerduty" | "webhook";

export interface NotifyRequest {
  readonly kind: NotifyKind;
  readonly path: string;
  readonly status: number;
  readonly body: unknown;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly receivedAtMs: number;
}

export interface NotifyFault {
  readonly kind: NotifyKind;
  /** HTTP status to answer with, or `timeout` to never answer. */
  readonly status: number | "timeout";
  readonly retryAfter?: string;
  /** How many requests get the fault. */
  readonly count: number;
}

/**
 * One PagerDuty incident (one alert) as the Events API v2 makes them: a trigger whose dedup_key has no open incident
 * opens one (a page); a trigger with the dedup_key of an open incident is appended to it as another Trigger log entry
 * and pages no one; a resolve closes the open incident and is dropped when none is open. A trigger after the resolve
 * opens a new incident (pages again). https://support.pagerduty.com/docs/event-management#deduplicate-alerts
 */
export interface PagerDutyIncident {
  readonly dedupKey: string;
  readonly status: "triggered" | "resolved";
  /** Trigger events merged into the incident (the first opens it; later ones update it). */
  readonly triggers: number;
  /** Resolve events received while it was open (1 once resolved). */
  readonly resolves: number;
}

export interface NotifyPeer {
  /** `http://127.0.0.1:PORT` */
  readonly url: string;
  requests(kind?: NotifyKind): NotifyRequest[];
  /** Every incident opened, in order: a dedup_key resolved and triggered again has two. Each one paged once. */
  incidents(): PagerDutyIncident[];
  /** PagerDuty resolve events that found no open incident (dropped, as PagerDuty does). */
  pagerDutyResolvesDropped(): number;
  injectFault(fault: NotifyFault): void;
  close(): Promise<void>;
}

export interface NotifyPeerOptions {
  readonly port?: number;
  readonly host?: string;
  /** Secret the generic webhook checks `x-sef-signature-256` against (no check when absent). */
  readonly webhookSecret?: string;
}

/** Documented limits: Teams messages 28 KB; PagerDuty events 512 KB; Slack 50 blocks, header 150 chars. */
export const limits = {
  teamsBytes: 28 * 1024,
  pagerDutyBytes: 512 * 1024,
  slackBlocks: 50,
  slackHeaderChars: 150,
  slackTextChars: 40_000,
  pagerDutySummaryChars: 1024,
} as const;

const maxBodyBytes = 4 * 1024 * 1024;

function kindOf(path: string): NotifyKind | undefined {
  if (path.startsWith("/teams/")) return "teams";
  if (path.startsWith("/slack/")) return "slack";
  if (path === "/v2/enqueue") return "pagerduty";
  if (path.startsWith("/hook/")) return "webhook";
  return undefined;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Problems with a Teams message carrying an Adaptive Card (empty when valid). */
export function teamsProblems(body: unknown): string[] {
  if (!isObject(body) || body.type !== "message") return ['type must be "message"'];
  const attachments = body.attachments;
  if (!Array.isArray(attachments) || attachments.length === 0) return ["attachments must be a non-empty array"];
  const problems: string[] = [];
  for (const a of attachments) {
    if (!isObject(a) || a.contentType !== "application/vnd.microsoft.card.adaptive")
      problems.push("attachment contentType must be application/vnd.microsoft.card.adaptive");
    else if (
      !isObject(a.content) ||
      a.content.type !== "AdaptiveCard" ||
      typeof a.content.version !== "string" ||
      !Array.isArray(a.content.body)
    ) {
      problems.push("attachment content must be an AdaptiveCard with version and body");
    }
  }
  return problems;
}

/** Problems with a Slack incoming-webhook message (Block Kit). */
export function slackProblems(body: unknown): string[] {
  if (!isObject(body)) return ["no_text"];
  const blocks = body.blocks;
  if (typeof body.text !== "string" && !Array.isArray(blocks)) return ["no_text"];
  if (typeof body.text === "string" && body.text.length > limits.slackTextChars) return ["msg_too_long"];
  if (blocks === undefined) return [];
  if (!Array.isArray(blocks) || blocks.length > limits.slackBlocks) return ["invalid_blocks"];
  for (const b of blocks) {
    if (!isObject(b) || typeof b.type !== "string") return ["invalid_blocks"];
    if (
      b.type === "header" &&
      (!isObject(b.text) ||
        b.text.type !== "plain_text" ||
        typeof b.text.text !== "string" ||
        b.text.text.length > limits.slackHeaderChars)
    )
      return ["invalid_blocks"];
    if (
      b.type === "section" &&
      Array.isArray(b.fields) &&
      (b.fields.length > 10 || b.fields.some((f) => !isObject(f) || typeof f.text !== "string" || f.text.length > 2000))
    ) {
      return ["invalid_blocks"];
    }
  }
  return [];
}

/** Problems with a PagerDuty Events API v2 event. */
export function pagerDutyProblems(body: unknown): string[] {
  if (!isObject(body)) return ["Event object is invalid"];
  const problems: string[] = [];
  if (typeof body.routing_key !== "string" || body.routing_key.length !== 32)
    problems.push("'routing_key' must be a 32-character integration key");
  if (!["trigger", "acknowledge", "resolve"].includes(String(body.event_action)))
    problems.push("'event_action' is invalid");
  if (body.dedup_key !== undefined && (typeof body.dedup_key !== "string" || body.dedup_key.length > 255))
    problems.push("'dedup_key' must be at most 255 characters");
  if (body.event_action !== "trigger" && typeof body.dedup_key !== "string")
    problems.push("'dedup_key' is required for acknowledge and resolve");
  if (body.event_action === "trigger") {
    const p = body.payload;
    if (!isObject(p)) problems.push("'payload' is missing");
    else {
      if (typeof p.summary !== "string" || p.summary.length === 0 || p.summary.length > limits.pagerDutySummaryChars)
        problems.push("'payload.summary' is missing or longer than 1024 characters");
      if (typeof p.source !== "string" || p.source.length === 0) problems.push("'payload.source' is missing");
      if (!["critical", "error", "warning", "info"].includes(String(p.severity)))
        problems.push("'payload.severity' is invalid");
    }
  }
  return problems;
}

type Incident = { dedupKey: string; status: "triggered" | "resolved"; triggers: number; resolves: number };

/** PagerDuty's incidents as the Events API v2 keeps them: one per dedup_key while open; a resolve without one is dropped. */
class IncidentBook {
  readonly incidents: Incident[] = [];
  private readonly open = new Map<string, Incident>();
  resolvesDropped = 0;

  apply(action: string, dedupKey: string): void {
    const open = this.open.get(dedupKey);
    if (action === "trigger") {
      if (open) open.triggers++;
      else {
        const incident: Incident = { dedupKey, status: "triggered", triggers: 1, resolves: 0 };
        this.incidents.push(incident);
        this.open.set(dedupKey, incident);
      }
    } else if (action === "resolve") {
      if (open) {
        open.status = "resolved";
        open.resolves++;
        this.open.delete(dedupKey);
      } else this.resolvesDropped++;
    }
  }
}

function answer(
  res: ServerResponse,
  status: number,
  body: string,
  contentType = "application/json",
  headers: Record<string, string> = {},
): number {
  res.writeHead(status, { "content-type": contentType, ...headers }).end(body);
  return status;
}

/** Answers a request that got past the injected faults as the target's service would; returns the status. */
function answerTarget(
  kind: NotifyKind,
  req: IncomingMessage,
  res: ServerResponse,
  raw: Buffer,
  book: IncidentBook,
  autoKey: string,
  webhookSecret: string | undefined,
): number {
  let body: unknown;
  try {
    body = JSON.parse(raw.toString("utf8"));
  } catch {
    return kind === "slack"
      ? answer(res, 400, "invalid_payload", "text/plain")
      : answer(res, 400, JSON.stringify({ message: "body is not JSON" }));
  }
  switch (kind) {
    case "teams": {
      if (raw.length > limits.teamsBytes)
        return answer(res, 413, JSON.stringify({ message: "Message size exceeds the 28 KB limit" }));
      const problems = teamsProblems(body);
      return problems.length
        ? answer(res, 400, JSON.stringify({ message: problems.join("; ") }))
        : answer(res, 202, "");
    }
    case "slack": {
      const problems = slackProblems(body);
      return problems.length ? answer(res, 400, problems[0]!, "text/plain") : answer(res, 200, "ok", "text/plain");
    }
    case "pagerduty": {
      if (raw.length > limits.pagerDutyBytes)
        return answer(res, 413, JSON.stringify({ status: "invalid event", message: "Request too large" }));
      const problems = pagerDutyProblems(body);
      if (problems.length)
        return answer(
          res,
          400,
          JSON.stringify({ status: "invalid event", message: "Event object is invalid", errors: problems }),
        );
      const event = body as { event_action: string; dedup_key?: string };
      const dedupKey = event.dedup_key ?? autoKey;
      book.apply(event.event_action, dedupKey);
      return answer(res, 202, JSON.stringify({ status: "success", message: "Event processed", dedup_key: dedupKey }));
    }
    case "webhook": {
      if (webhookSecret) {
        const expected = Buffer.from(`sha256=${createHmac("sha256", webhookSecret).update(raw).digest("hex")}`);
        const given = Buffer.from(String(req.headers["x-sef-signature-256"] ?? ""));
        if (given.length !== expected.length || !timingSafeEqual(given, expected))
          return answer(res, 401, JSON.stringify({ message: "bad signature" }));
      }
      return answer(res, 200, "{}");
    }
  }
}

export async function startNotifyPeer(options: NotifyPeerOptions = {}): Promise<NotifyPeer> {
  const recorded: NotifyRequest[] = [];
  const faults: Array<NotifyFault & { left: number }> = [];
  const book = new IncidentBook();
  const hanging = new Set<ServerResponse>();

  const handle = (kind: NotifyKind, req: IncomingMessage, res: ServerResponse, raw: Buffer): number => {
    const fault = faults.find((f) => f.kind === kind && f.left > 0);
    if (fault) {
      fault.left--;
      if (fault.status === "timeout") {
        hanging.add(res);
        return 0;
      }
      return answer(
        res,
        fault.status,
        JSON.stringify({ message: "injected fault" }),
        "application/json",
        fault.retryAfter !== undefined ? { "retry-after": fault.retryAfter } : {},
      );
    }
    return answerTarget(kind, req, res, raw, book, `auto-${recorded.length}`, options.webhookSecret);
  };

  const server: Server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0]!;
    const kind = kindOf(path);
    if (req.method !== "POST" || !kind) {
      res.writeHead(404).end();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size <= maxBodyBytes) chunks.push(c);
    });
    req.on("end", () => {
      const raw = Buffer.concat(chunks);
      const status = size > maxBodyBytes ? answer(res, 413, "{}") : handle(kind, req, res, raw);
      let body: unknown = raw.toString("utf8");
      try {
        body = JSON.parse(body as string);
      } catch {
        // recorded as text
      }
      recorded.push({ kind, path, status, body, headers: req.headers, receivedAtMs: Date.now() });
    });
  });
  const port = await listen(server, options.port ?? 0, options.host ?? "127.0.0.1");
  return {
    url: `http://${options.host ?? "127.0.0.1"}:${port}`,
    requests: (kind) => recorded.filter((r) => kind === undefined || r.kind === kind),
    incidents: () => book.incidents.map((i) => ({ ...i })),
    pagerDutyResolvesDropped: () => book.resolvesDropped,
    injectFault: (fault) => faults.push({ ...fault, left: fault.count }),
    close: async () => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
