// The HTTP layer of `sef-testbed simulate`: a local IMDS (scheduled events, instance metadata, managed-identity tokens)
// playing a scenario timeline, plus a small test-only control API under /__sim/.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { createHash } from "node:crypto";
import { z } from "zod";
import { listen } from "../support/listen.js";
import { localTokenResponse } from "../peers/local-tokens.js";
import { silentLogger, type Logger } from "../support/logger.js";
import { systemClock, type Clock } from "../support/clock.js";
import { latestScheduledEventsApiVersion, type ScheduledEventsApiVersion } from "./api-versions.js";
import { computeFor } from "./compute.js";
import { hugeBody, malformedBody, malformedVariants, renderDocument, type ImdsDocument } from "./document.js";
import { checkRequest, normalizedPath } from "./imds-request.js";
import { scenarioEventSchema, type Fault, type Scenario } from "./scenario-schema.js";
import { loadScenario } from "./scenarios.js";
import { Timeline, type ApprovalOutcome, type DocumentChange } from "./timeline.js";

/** Test-only request header (not part of IMDS): which simulated VM is asking, for `/metadata/instance*`. */
export const simVmHeader = "x-sef-sim-vm";
export const defaultSimulatorHost = "127.0.0.1";
export const maxRequestBodyBytes = 64 * 1024;
export const defaultHugeBodyBytes = 8 * 1024 * 1024;
export const defaultSlowDelaySeconds = 120;
const tickIntervalMs = 50;
const tokenLifetimeSeconds = 3599;

export interface SimulatorOptions {
  /** A loaded scenario, or a built-in scenario name / scenario file path. */
  scenario: Scenario | string;
  /** TCP port; default 0 (ephemeral). */
  port?: number;
  /** Bind address; default 127.0.0.1. */
  host?: string;
  /** Scenario seconds per wall-clock second; default: the scenario's `speed`. */
  speed?: number;
  /** Restart the scenario when it ends; default false. */
  loop?: boolean;
  /** When scenario time starts: at the first scheduled-events request (like IMDS enabling on first use; default) or at listen. */
  startOn?: "first-request" | "listen";
  clock?: Clock;
  logger?: Logger;
  /**
   * Test-only: hold each StartRequests POST this long before applying and answering it (the agent can be killed
   * while its approval is in flight). The POST counts in `approvalsHeld` on arrival and is applied after the delay
   * even if the client has gone, like a request IMDS already took. Default 0.
   */
  approvalDelayMs?: number;
  /** Resource tags per VM name (the scenario VM or any `X-Sef-Sim-Vm` name); VMs not listed carry the scenario VM's `tags`. */
  vmTags?: Readonly<Record<string, Readonly<Record<string, string>>>>;
}

export interface ApprovalEntry {
  EventId: string;
  at: string;
  atMs: number;
  outcome: ApprovalOutcome;
  /** How many approvals this EventId has received so far, this one included. */
  count: number;
}

export interface SimStatus {
  scenario: string;
  description: string;
  speed: number;
  loop: boolean;
  started: boolean;
  startedAt: string | null;
  scenarioSeconds: number;
  durationSeconds: number;
  ended: boolean;
  loopIndex: number;
  incarnation: number;
  /** The document at the newest api-version. */
  document: ImdsDocument;
  approvals: ApprovalEntry[];
  /** StartRequests POSTs received and still held by `approvalDelayMs` (not yet in `approvals`). */
  approvalsHeld: number;
  /** Requests by path, then by HTTP status (`reset` for connections dropped on purpose). Excludes /__sim/. */
  requests: Record<string, Record<string, number>>;
  /** Faults served, by kind (`status:500`, `malformed-json`, ...). */
  faultsServed: Record<string, number>;
}

export interface Simulator {
  readonly url: string;
  readonly host: string;
  readonly port: number;
  readonly scenario: Scenario;
  readonly speed: number;
  status(): SimStatus;
  /** Replaces the Events array now (new incarnation). Events use the scenario event format. */
  setEvents(events: readonly z.input<typeof scenarioEventSchema>[]): { changedAtMs: number; incarnation: number };
  /** Jumps scenario time forward. */
  advance(seconds: number): SimStatus;
  /** Sets the resource tags instance metadata serves for `vmName` from now on. */
  setVmTags(vmName: string, tags: Readonly<Record<string, string>>): void;
  /** Resolves when a non-looping scenario has run its duration (never for `loop`). */
  waitForEnd(): Promise<void>;
  /** The latest requests (up to {@link requestLogLimit}) in arrival order, on this simulator's clock; excludes /__sim/. */
  requestLog(path?: string): readonly RequestLogEntry[];
  close(): Promise<void>;
}

/** One request as the simulator saw it: when it arrived (its clock's `now()`), where, and the answer's status label. */
export interface RequestLogEntry {
  readonly atMs: number;
  readonly path: string;
  readonly status: string;
}

/** How many requests {@link Simulator.requestLog} keeps (the oldest are dropped first). */
export const requestLogLimit = 10_000;

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: Record<string, unknown>,
  ) {
    super(String(body.error ?? status));
  }
}

const startRequestsSchema = z.object({
  StartRequests: z.array(z.object({ EventId: z.string().min(1) })).min(1),
  DocumentIncarnation: z.number().int().optional(),
});
const setEventsSchema = z.object({ Events: z.array(scenarioEventSchema) });
const advanceSchema = z.object({ seconds: z.number().min(0) });

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "Content-Type": "application/json; charset=utf-8", "Content-Length": Buffer.byteLength(text), ...headers });
  res.end(text);
}

/** A strong ETag of a body: the same document always has the same tag, any change changes it. */
export function etagOf(text: string): string {
  return `"${createHash("sha256").update(text).digest("hex").slice(0, 32)}"`;
}

/** Whether an If-None-Match header names `etag` (a list of tags, or `*`; weak tags compare by their opaque part). */
export function ifNoneMatchMatches(header: string | string[] | undefined, etag: string): boolean {
  if (header === undefined) return false;
  const tags = (Array.isArray(header) ? header.join(",") : header).split(",").map((t) => t.trim().replace(/^W\//, ""));
  return tags.some((tag) => tag === "*" || tag === etag);
}

/**
 * A scheduled-events document with its ETag; 304 Not Modified (no body) when the request's If-None-Match names it,
 * as Microsoft's Node.js sample expects IMDS to do. Clients that send no If-None-Match always get the 200.
 */
function sendDocument(req: IncomingMessage, res: ServerResponse, document: unknown): string {
  const text = JSON.stringify(document);
  const etag = etagOf(text);
  if (ifNoneMatchMatches(req.headers["if-none-match"], etag)) {
    res.writeHead(304, { ETag: etag });
    res.end();
    return "304";
  }
  res.writeHead(200, { "Content-Type": "application/json; charset=utf-8", "Content-Length": Buffer.byteLength(text), ETag: etag });
  res.end(text);
  return "200";
}

function sendText(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { "Content-Type": "application/json; charset=utf-8", "Content-Length": Buffer.byteLength(text) });
  res.end(text);
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > maxRequestBodyBytes) throw new HttpError(400, { error: `Bad request. Body larger than ${maxRequestBodyBytes} bytes.` });
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}

async function readJsonBody<T>(req: IncomingMessage, schema: z.ZodType<T>, what: string): Promise<T> {
  const text = await readBody(req);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new HttpError(400, { error: `Bad request. ${what} is not valid JSON.` });
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const detail = parsed.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`).join("; ");
    throw new HttpError(400, { error: `Bad request. ${what} is malformed: ${detail}` });
  }
  return parsed.data;
}

function faultLabel(fault: Fault): string {
  return fault.kind === "status" ? `status:${fault.status}` : fault.kind;
}

/** Starts the simulated IMDS; resolves once it listens. */
export async function startSimulator(options: SimulatorOptions): Promise<Simulator> {
  const scenario = typeof options.scenario === "string" ? loadScenario(options.scenario) : options.scenario;
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? silentLogger();
  const timeline = new Timeline(scenario, { speed: options.speed, loop: options.loop });
  const vmTags = new Map<string, Readonly<Record<string, string>>>(Object.entries(options.vmTags ?? {}));
  const requestCounts: Record<string, Record<string, number>> = {};
  const requestLog: RequestLogEntry[] = [];
  const faultsServed: Record<string, number> = {};
  const approvals: ApprovalEntry[] = [];
  const approvalCounts = new Map<string, number>();
  const lifetime = new AbortController();
  let approvalsHeld = 0;
  let malformedRotation = 0;
  let hugeCache: { key: string; body: string } | null = null;
  let endResolve: (() => void) | null = null;
  const endPromise = new Promise<void>((resolve) => {
    endResolve = resolve;
  });

  const logChanges = (changes: readonly DocumentChange[]): void => {
    for (const change of changes) {
      logger.info({ incarnation: change.incarnation, cause: change.cause, events: change.events, scenarioSeconds: Math.round(timeline.scenarioSeconds(change.atMs)) }, "document changed");
    }
  };
  const sync = (nowMs: number): void => {
    logChanges(timeline.advance(nowMs));
    if (endResolve && timeline.ended(nowMs)) {
      logger.info({ scenario: scenario.name }, "scenario ended; serving the final document");
      endResolve();
      endResolve = null;
    }
  };
  const startTimeline = (nowMs: number): void => {
    if (!timeline.started) {
      logger.info({ scenario: scenario.name, speed: timeline.speed }, "scenario started");
      logChanges(timeline.start(nowMs));
    }
    sync(nowMs);
  };
  const countRequest = (path: string, status: string, arrivedAtMs: number): void => {
    const byStatus = (requestCounts[path] ??= {});
    byStatus[status] = (byStatus[status] ?? 0) + 1;
    requestLog.push({ atMs: arrivedAtMs, path, status });
    if (requestLog.length > requestLogLimit) requestLog.splice(0, requestLog.length - requestLogLimit);
  };
  const currentDocument = (apiVersion: ScheduledEventsApiVersion): ImdsDocument => renderDocument(timeline.snapshot(), apiVersion);

  const status = (): SimStatus => {
    const nowMs = clock.now();
    sync(nowMs);
    const startedAtMs = timeline.startedAtMs;
    return {
      scenario: scenario.name,
      description: scenario.description,
      speed: timeline.speed,
      loop: timeline.loop,
      started: timeline.started,
      startedAt: startedAtMs === null ? null : new Date(startedAtMs).toISOString(),
      scenarioSeconds: timeline.scenarioSeconds(nowMs),
      durationSeconds: scenario.durationSeconds,
      ended: timeline.ended(nowMs),
      loopIndex: timeline.loopIndex,
      incarnation: timeline.incarnation,
      document: currentDocument(latestScheduledEventsApiVersion),
      approvals: approvals.map((a) => ({ ...a })),
      approvalsHeld,
      requests: structuredClone(requestCounts),
      faultsServed: { ...faultsServed },
    };
  };

  const setEvents: Simulator["setEvents"] = (events) => {
    const parsed = z.array(scenarioEventSchema).parse(events);
    const changedAtMs = clock.now();
    sync(changedAtMs);
    const incarnation = timeline.replaceEvents(parsed, changedAtMs);
    logger.info({ incarnation, events: parsed.map((e) => e.EventId) }, "document replaced through the control API");
    return { changedAtMs, incarnation };
  };

  const advance = (seconds: number): SimStatus => {
    logChanges(timeline.fastForward(seconds, clock.now()));
    return status();
  };

  async function serveFault(fault: Fault, res: ServerResponse, req: IncomingMessage, apiVersion: ScheduledEventsApiVersion): Promise<string> {
    const label = faultLabel(fault);
    faultsServed[label] = (faultsServed[label] ?? 0) + 1;
    logger.debug({ fault: label }, "serving fault");
    switch (fault.kind) {
      case "status": {
        const headers: Record<string, string> = fault.retryAfterSeconds === undefined ? {} : { "Retry-After": String(fault.retryAfterSeconds) };
        const error = fault.status === 429 ? "Too many requests" : fault.status === 410 ? "Gone" : fault.status >= 500 ? "Internal server error" : "Error";
        sendJson(res, fault.status, { error }, headers);
        return String(fault.status);
      }
      case "malformed-json": {
        const variant = fault.variant === undefined || fault.variant === "rotate" ? malformedVariants[malformedRotation++ % malformedVariants.length]! : fault.variant;
        sendText(res, 200, malformedBody(currentDocument(apiVersion), variant));
        return "200";
      }
      case "malformed-event": {
        const document = currentDocument(apiVersion);
        sendJson(res, 200, { ...document, Events: [...document.Events, fault.event] });
        return "200";
      }
      case "huge-body": {
        const size = fault.sizeBytes ?? defaultHugeBodyBytes;
        const document = currentDocument(apiVersion);
        const key = `${apiVersion}/${size}/${JSON.stringify(document)}`;
        if (hugeCache?.key !== key) hugeCache = { key, body: hugeBody(document, size) };
        sendText(res, 200, hugeCache.body);
        return "200";
      }
      case "slow": {
        const delayMs = fault.delayMs ?? timeline.wallMs(fault.delaySeconds ?? defaultSlowDelaySeconds);
        try {
          await clock.sleep(delayMs, lifetime.signal);
        } catch {
          req.socket.destroy();
          return "reset";
        }
        sync(clock.now());
        return sendDocument(req, res, currentDocument(apiVersion));
      }
      case "reset":
        req.socket.destroy();
        return "reset";
    }
  }

  /** Waits `approvalDelayMs` (test-only); says whether it held the request, or that the simulator closed meanwhile. */
  async function holdApproval(ids: readonly string[]): Promise<"not-held" | "held" | "closed"> {
    const delayMs = options.approvalDelayMs ?? 0;
    if (delayMs <= 0) return "not-held";
    approvalsHeld += 1;
    logger.info({ eventIds: ids, delayMs }, "approval received; holding it (approvalDelayMs)");
    try {
      await clock.sleep(delayMs, lifetime.signal);
      return "held";
    } catch {
      return "closed";
    } finally {
      approvalsHeld -= 1;
    }
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<string> {
    const nowMs = clock.now();
    const checked = checkRequest(req.method ?? "GET", req.url ?? "/", req.headers);
    if (!checked.ok) {
      sendJson(res, checked.status, checked.body, checked.headers);
      return String(checked.status);
    }
    if (checked.kind === "sim") {
      if (checked.route === "sim-status") sendJson(res, 200, status());
      else if (checked.route === "sim-document") {
        const body = await readJsonBody(req, setEventsSchema, "Body");
        try {
          const result = setEvents(body.Events);
          sendJson(res, 200, { changedAtMs: result.changedAtMs, DocumentIncarnation: result.incarnation });
        } catch (err) {
          throw new HttpError(400, { error: (err as Error).message });
        }
      } else {
        const body = await readJsonBody(req, advanceSchema, "Body");
        sendJson(res, 200, advance(body.seconds));
      }
      return "200";
    }
    switch (checked.route) {
      case "scheduledevents": {
        const apiVersion = checked.apiVersion as ScheduledEventsApiVersion;
        startTimeline(nowMs);
        if (req.method === "POST") {
          const body = await readJsonBody(req, startRequestsSchema, "StartRequests body");
          const ids = body.StartRequests.map((r) => r.EventId);
          const held = await holdApproval(ids);
          if (held === "closed") {
            req.socket.destroy();
            return "reset";
          }
          const appliedMs = held === "held" ? clock.now() : nowMs;
          const outcomes = timeline.approve(ids, appliedMs);
          ids.forEach((id, index) => {
            const count = (approvalCounts.get(id) ?? 0) + 1;
            approvalCounts.set(id, count);
            const outcome = outcomes[index] ?? "unknown";
            approvals.push({ EventId: id, at: new Date(appliedMs).toISOString(), atMs: appliedMs, outcome, count });
            logger.info({ eventId: id, outcome, count }, "approval received");
          });
          logChanges(timeline.changes().filter((c) => c.atMs === appliedMs && c.cause === "approval").slice(-1));
          const unknown = ids.filter((_id, index) => outcomes[index] === "unknown");
          if (unknown.length > 0) throw new HttpError(400, { error: `Bad request. Unknown EventId: ${unknown.join(", ")}` });
          res.writeHead(200, { "Content-Length": 0 });
          res.end();
          return "200";
        }
        const fault = timeline.takeFault(nowMs);
        if (fault) return serveFault(fault, res, req, apiVersion);
        return sendDocument(req, res, currentDocument(apiVersion));
      }
      case "compute":
      case "instance": {
        const vmName = req.headers[simVmHeader];
        const name = typeof vmName === "string" && vmName.trim() !== "" ? vmName.trim() : scenario.vm.name;
        const compute = computeFor(scenario.vm, name, vmTags.get(name));
        sendJson(res, 200, checked.route === "compute" ? compute : { compute, network: { interface: [] } });
        return "200";
      }
      case "token": {
        const resource = checked.query.get("resource");
        if (!resource) {
          sendJson(res, 400, { error: "invalid_request", error_description: "Required query variable 'resource' is missing" });
          return "400";
        }
        const clientId = checked.query.get("client_id") ?? checked.query.get("object_id") ?? checked.query.get("msi_res_id") ?? undefined;
        // Without a client id the system-assigned identity answers; the body names it by the VM's id.
        const body = localTokenResponse(resource, { clientId, nowMs, lifetimeSeconds: tokenLifetimeSeconds });
        sendJson(res, 200, { ...body, client_id: clientId ?? computeFor(scenario.vm).vmId });
        return "200";
      }
    }
  }

  const server = createServer((req, res) => {
    const path = normalizedPath(req.url ?? "/");
    const counted = !path.startsWith("/__sim/");
    const arrivedAtMs = clock.now();
    res.on("error", () => undefined);
    handle(req, res).then(
      (statusLabel) => {
        if (counted) countRequest(path, statusLabel, arrivedAtMs);
        logger.debug({ method: req.method, path, status: statusLabel }, "request");
      },
      (err: unknown) => {
        const httpError = err instanceof HttpError ? err : new HttpError(500, { error: "Internal server error" });
        if (!(err instanceof HttpError)) logger.error({ err }, "request failed");
        if (!res.headersSent && !res.destroyed) sendJson(res, httpError.status, httpError.body);
        if (counted) countRequest(path, String(httpError.status), arrivedAtMs);
      },
    );
  });
  server.keepAliveTimeout = 5000;

  const host = options.host ?? defaultSimulatorHost;
  const port = await listen(server, options.port ?? 0, host);
  if (options.startOn === "listen") startTimeline(clock.now());
  const tick = setInterval(() => sync(clock.now()), tickIntervalMs);
  tick.unref();
  const url = `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
  logger.info({ url, scenario: scenario.name, speed: timeline.speed, loop: timeline.loop }, "simulator listening");

  let closing: Promise<void> | null = null;
  return {
    url,
    host,
    port,
    scenario,
    speed: timeline.speed,
    status,
    setEvents,
    advance,
    setVmTags: (vmName, tags) => void vmTags.set(vmName, { ...tags }),
    waitForEnd: () => endPromise,
    requestLog: (path) => (path === undefined ? [...requestLog] : requestLog.filter((r) => r.path === path)),
    close: () => {
      closing ??= new Promise<void>((resolve) => {
        clearInterval(tick);
        lifetime.abort(new Error("simulator closed"));
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}
