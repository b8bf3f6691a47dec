// The local Logs Ingestion peer: an HTTPS server speaking the Logs Ingestion API (POST rows to a DCR stream) that
// behaves like the service: token, rule and stream checks, 1 MB before and after gzip (413), per-rule request and byte
// limits (429 + Retry-After), silent drop of undeclared or mistyped columns (counted for tests), injected faults.
import { randomBytes } from "node:crypto";
import { rmSync, writeFileSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { createServer, type Server } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { gunzip as gunzipCallback } from "node:zlib";
import type { Logger } from "pino";
import { listen } from "@sef/runtime/listen.js";
import { streamColumns, streamName as contractStreamName } from "@sef/contract/stream-schema.js";
import { silentLogger } from "../../support/logger.js";
import { verifyLocalToken } from "../local-tokens.js";
import { generateLocalTlsIdentity } from "../../support/tls-identity.js";
import { FaultQueue, parseFaultSpec, type Fault } from "./faults.js";
import { azureRuleLimits, RuleWindow, type RuleLimits } from "./rule-limits.js";
import { keepDeclaredColumns, type DeclaredColumn } from "./stream-declaration.js";
import { defaultLocalRuleId } from "./local-rule.js";

export { defaultLocalRuleId };

const gunzip = promisify(gunzipCallback);

/** The api-version of the released API (what the agent's sink sends). */
export const logsIngestionApiVersion = "2023-01-01";
/** Every api-version the peer accepts: the released one, and the preview that azure-monitor-ingestion 1.0.0b2 sends. */
export const logsIngestionApiVersions: readonly string[] = [logsIngestionApiVersion, "2021-11-01-preview"];
/** Token audience of the Logs Ingestion API. */
export const logsIngestionAudience = "https://monitor.azure.com";
/** Largest request body accepted, as received and after gunzip, in bytes (the service's 1 MB). */
export const maxRequestBodyBytes = 1024 * 1024;
/** Bodies larger than this are not even drained: the connection is dropped. */
const maxDrainBytes = 64 * 1024 * 1024;

export interface LogsIngestionEmulatorOptions {
  /** TCP port; 0 (default) picks a free one. */
  readonly port?: number;
  /** Listen address (default 127.0.0.1). */
  readonly host?: string;
  /** Immutable id of the one DCR this peer serves (default `dcr-000…0`). */
  readonly ruleId?: string;
  /** The one stream the DCR declares (default `Custom-ScheduledEvents`). */
  readonly streamName?: string;
  /** Columns the stream declares (default: the record contract's, as the Bicep templates deploy them). */
  readonly columns?: readonly DeclaredColumn[];
  /** Per-rule limits (default Azure's: 12,000 requests and 2 GB per minute); lower them in tests. */
  readonly limits?: Partial<RuleLimits>;
  /** Client ids (token `appid`, "system" for a system-assigned identity) allowed to ingest; default: any. */
  readonly authorizedClientIds?: readonly string[];
  /** Monotonic milliseconds for the per-minute limits (default `performance.now`). */
  readonly monotonicNowMs?: () => number;
  /** Where to write the certificate clients must trust (default: a temporary file removed on close). */
  readonly caCertPath?: string;
  readonly logger?: Logger;
}

/** What the peer dropped silently, as the service does: tests assert these stay empty. */
export interface LogsIngestionDrops {
  /** Per undeclared column name, how many rows carried it. */
  readonly undeclaredColumns: Readonly<Record<string, number>>;
  /** Per declared column name, how many rows carried a value of the wrong type for it. */
  readonly mistypedColumns: Readonly<Record<string, number>>;
  /** Rows that were not JSON objects (nothing of them is kept). */
  readonly nonObjectRows: number;
  /** Every drop above, summed. */
  readonly total: number;
}

export interface LogsIngestionRequestStats {
  /** Requests received on the ingestion route (faulted and refused ones included). */
  readonly count: number;
  /** Body size of each of those requests as received (compressed), in bytes. */
  readonly sizes: readonly number[];
  /** Body size after gunzip of each request that got that far, in bytes. */
  readonly uncompressedSizes: readonly number[];
  /** How many answers had each status (`reset` for dropped connections). */
  readonly statuses: Readonly<Record<string, number>>;
}

export interface LogsIngestionEmulator {
  /** `https://HOST:PORT`, the endpoint the sink is configured with. */
  readonly endpoint: string;
  readonly port: number;
  readonly ruleId: string;
  readonly streamName: string;
  /** PEM file of the peer's self-signed certificate (trust it as a CA). */
  readonly caCertPath: string;
  /** Every row accepted so far, in arrival order, as stored (undeclared and mistyped columns dropped). */
  rows(): readonly Record<string, unknown>[];
  requests(): LogsIngestionRequestStats;
  /** Columns and rows dropped silently so far (also `GET /__peer/stats`). */
  droppedColumns(): LogsIngestionDrops;
  readonly faults: {
    /** The next `count` ingestion requests meet `fault`. */
    failNext(count: number, fault: Fault): void;
    clear(): void;
    /** Faults not yet used. */
    pending(): number;
  };
  close(): Promise<void>;
}

interface PeerState {
  readonly ruleId: string;
  readonly streamName: string;
  readonly columns: readonly DeclaredColumn[];
  readonly ruleWindow: RuleWindow;
  readonly authorizedClientIds: ReadonlySet<string> | undefined;
  readonly monotonicNowMs: () => number;
  readonly undeclaredColumns: Record<string, number>;
  readonly mistypedColumns: Record<string, number>;
  nonObjectRows: number;
  readonly rows: Record<string, unknown>[];
  readonly sizes: number[];
  readonly uncompressedSizes: number[];
  readonly statuses: Record<string, number>;
  readonly faults: FaultQueue;
  readonly logger: Logger;
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = body === undefined ? "" : JSON.stringify(body);
  res.writeHead(status, {
    ...(text ? { "content-type": "application/json" } : {}),
    "content-length": Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

function sendError(
  res: ServerResponse,
  status: number,
  code: string,
  message: string,
  headers: Record<string, string> = {},
): void {
  sendJson(res, status, { error: { code, message } }, headers);
}

/** Reads the body; `tooLarge` once it passes `limitBytes` (the rest is drained, not kept). */
async function readBody(
  req: IncomingMessage,
  limitBytes: number,
): Promise<{ body: Buffer; receivedBytes: number; tooLarge: boolean }> {
  const chunks: Buffer[] = [];
  let receivedBytes = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    receivedBytes += chunk.length;
    if (receivedBytes <= limitBytes) chunks.push(chunk);
    else chunks.length = 0;
    if (receivedBytes > maxDrainBytes) {
      req.socket.destroy();
      break;
    }
  }
  return { body: Buffer.concat(chunks), receivedBytes, tooLarge: receivedBytes > limitBytes };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function count(state: PeerState, status: number | "reset"): void {
  state.statuses[String(status)] = (state.statuses[String(status)] ?? 0) + 1;
}

/** What a request admitted by the rule's limits adds its bytes to. */
type RuleWindowEntry = { addBytes(bytes: number): void };

/** An answer that refuses a request: status, the service's error code and message, extra headers. */
interface Refusal {
  readonly status: number;
  readonly code: string;
  readonly message: string;
  readonly headers?: Record<string, string>;
}

const refuse = (status: number, code: string, message: string, headers?: Record<string, string>): Refusal => ({
  status,
  code,
  message,
  ...(headers ? { headers } : {}),
});

async function handleIngest(
  state: PeerState,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  match: RegExpExecArray,
): Promise<void> {
  const { body, receivedBytes, tooLarge } = await readBody(req, maxRequestBodyBytes);
  state.sizes.push(receivedBytes);
  if (await answeredByFault(state, req, res)) return;

  const admitted = admit(state, req, url, match);
  const decoded =
    "status" in admitted ? admitted : await decodeRows(state, req, body, receivedBytes, tooLarge, admitted.entry);
  if ("status" in decoded) {
    count(state, decoded.status);
    sendError(res, decoded.status, decoded.code, decoded.message, decoded.headers ?? {});
    return;
  }
  keepRows(state, decoded.rows);
  count(state, 204);
  res.writeHead(204);
  res.end();
}

/** An injected fault for this request (after its delay): a reset or an error status. True when it answered. */
async function answeredByFault(state: PeerState, req: IncomingMessage, res: ServerResponse): Promise<boolean> {
  const fault = state.faults.take();
  if (!fault) return false;
  if (fault.delayMs) await sleep(fault.delayMs);
  if (fault.reset) {
    count(state, "reset");
    req.socket.destroy();
    return true;
  }
  if (fault.status === undefined) return false;
  count(state, fault.status);
  sendError(
    res,
    fault.status,
    fault.status === 429 ? "TooManyRequests" : "ServiceError",
    `injected fault: HTTP ${fault.status}`,
    { ...fault.headers },
  );
  return true;
}

/** The service's checks before the body: token, rule, access, stream, api-version, then the rule's limits. */
function admit(
  state: PeerState,
  req: IncomingMessage,
  url: URL,
  match: RegExpExecArray,
): Refusal | { entry: RuleWindowEntry | undefined } {
  const authorization = req.headers.authorization ?? "";
  const token = /^Bearer\s+(\S+)$/i.exec(authorization)?.[1];
  if (!token)
    return refuse(
      401,
      "InvalidAuthenticationToken",
      "Authentication failed. The 'Authorization' header is missing or is not a bearer token.",
    );
  const check = verifyLocalToken(token, logsIngestionAudience);
  if (!check.ok) {
    if (check.reason.startsWith("token audience"))
      return refuse(
        401,
        "InvalidAuthenticationTokenAudience",
        `The access token has the wrong audience: ${check.reason}.`,
      );
    return refuse(401, "InvalidAuthenticationToken", `The access token is invalid: ${check.reason}.`);
  }

  const ruleId = decodeURIComponent(match[1]!);
  const stream = decodeURIComponent(match[2]!);
  if (ruleId !== state.ruleId)
    return refuse(404, "NotFound", `Data collection rule with immutable Id '${ruleId}' not found.`);
  if (state.authorizedClientIds && !state.authorizedClientIds.has(check.claims.appid)) {
    return refuse(
      403,
      "OperationFailed",
      `The authentication token provided does not have access to ingest data for the data collection rule with immutable Id '${ruleId}'.`,
    );
  }
  if (stream !== state.streamName)
    return refuse(404, "InvalidStream", `Stream '${stream}' is not declared in data collection rule '${ruleId}'.`);
  if (!logsIngestionApiVersions.includes(url.searchParams.get("api-version") ?? "")) {
    return refuse(400, "UnsupportedApiVersion", `api-version must be one of ${logsIngestionApiVersions.join(", ")}`);
  }
  const admission = state.ruleWindow.admit(state.monotonicNowMs());
  if (!admission.admitted) {
    return refuse(
      429,
      "TooManyRequests",
      `Data collection rule '${ruleId}' received ${admission.reason}; retry after ${admission.retryAfterSeconds} s.`,
      {
        "Retry-After": String(admission.retryAfterSeconds),
      },
    );
  }
  return { entry: admission.entry };
}

/** The body as rows: within 1 MB as received and once gunzipped (counted against the rule), a JSON array. */
async function decodeRows(
  state: PeerState,
  req: IncomingMessage,
  body: Buffer,
  receivedBytes: number,
  tooLarge: boolean,
  entry: RuleWindowEntry | undefined,
): Promise<Refusal | { rows: unknown[] }> {
  entry?.addBytes(receivedBytes);
  const tooLargeMessage = (what: string, bytes: number): string =>
    `Maximum allowed content length: ${maxRequestBodyBytes} bytes (1 MB). Provided content length: ${bytes} bytes${what}.`;
  if (tooLarge) return refuse(413, "ContentLengthLimitExceeded", tooLargeMessage("", receivedBytes));

  let text: string;
  const encoding = (req.headers["content-encoding"] ?? "").toLowerCase();
  if (encoding === "gzip") {
    let raw: Buffer;
    try {
      raw = await gunzip(body, { maxOutputLength: maxRequestBodyBytes + 1 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE") {
        state.uncompressedSizes.push(maxRequestBodyBytes + 1);
        return refuse(
          413,
          "ContentLengthLimitExceeded",
          tooLargeMessage(" once decompressed (more than the limit)", receivedBytes),
        );
      }
      return refuse(400, "InvalidContentEncoding", `body is not valid gzip: ${(err as Error).message}`);
    }
    state.uncompressedSizes.push(raw.length);
    entry?.addBytes(raw.length - receivedBytes);
    if (raw.length > maxRequestBodyBytes)
      return refuse(
        413,
        "ContentLengthLimitExceeded",
        tooLargeMessage(` once decompressed (${raw.length} bytes)`, receivedBytes),
      );
    text = raw.toString("utf8");
  } else {
    state.uncompressedSizes.push(body.length);
    text = body.toString("utf8");
  }
  let rows: unknown;
  try {
    rows = JSON.parse(text);
  } catch (err) {
    return refuse(400, "InvalidPayload", `body is not JSON: ${(err as Error).message}`);
  }
  if (!Array.isArray(rows)) return refuse(400, "InvalidPayload", "body must be a JSON array of rows");
  return { rows };
}

/** Like the service: what does not fit the stream declaration is dropped silently, the request still succeeds. */
function keepRows(state: PeerState, rows: readonly unknown[]): void {
  for (const posted of rows) {
    if (posted === null || typeof posted !== "object" || Array.isArray(posted)) {
      state.nonObjectRows += 1;
      continue;
    }
    const kept = keepDeclaredColumns(posted, state.columns);
    for (const name of kept.undeclaredColumns) state.undeclaredColumns[name] = (state.undeclaredColumns[name] ?? 0) + 1;
    for (const name of kept.mistypedColumns) state.mistypedColumns[name] = (state.mistypedColumns[name] ?? 0) + 1;
    if (kept.undeclaredColumns.length + kept.mistypedColumns.length > 0) {
      state.logger.warn(
        { undeclared: kept.undeclaredColumns, mistyped: kept.mistypedColumns },
        "dropped columns silently, as the service does",
      );
    }
    state.rows.push(kept.row);
  }
}

function drops(state: PeerState): LogsIngestionDrops {
  const sum = (counts: Record<string, number>): number => Object.values(counts).reduce((a, b) => a + b, 0);
  return {
    undeclaredColumns: { ...state.undeclaredColumns },
    mistypedColumns: { ...state.mistypedColumns },
    nonObjectRows: state.nonObjectRows,
    total: sum(state.undeclaredColumns) + sum(state.mistypedColumns) + state.nonObjectRows,
  };
}

async function handle(state: PeerState, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? "/", "https://peer.local");
  const ingest = /^\/dataCollectionRules\/([^/]+)\/streams\/([^/]+)$/.exec(url.pathname);
  if (ingest && req.method === "POST") return handleIngest(state, req, res, url, ingest);
  if (req.method === "GET" && url.pathname === "/__peer/rows") return sendJson(res, 200, state.rows);
  if (req.method === "GET" && url.pathname === "/__peer/stats") {
    return sendJson(res, 200, {
      requests: { count: state.sizes.length, statuses: state.statuses },
      rowsKept: state.rows.length,
      dropped: drops(state),
      requestsInLastMinute: state.ruleWindow.requestsInWindow(state.monotonicNowMs()),
    });
  }
  if (req.method === "GET" && url.pathname === "/__peer/requests") {
    return sendJson(res, 200, {
      count: state.sizes.length,
      sizes: state.sizes,
      uncompressedSizes: state.uncompressedSizes,
      statuses: state.statuses,
    });
  }
  if (req.method === "POST" && url.pathname === "/__peer/faults") {
    const { body } = await readBody(req, 64 * 1024);
    try {
      const { spec } = JSON.parse(body.toString("utf8")) as { spec?: unknown };
      const { count: n, fault } = parseFaultSpec(String(spec));
      state.faults.failNext(n, fault);
      return sendJson(res, 200, { pending: state.faults.pending() });
    } catch (err) {
      return sendError(res, 400, "InvalidFault", (err as Error).message);
    }
  }
  req.resume();
  sendError(res, 404, "NotFound", `no route for ${req.method ?? "?"} ${url.pathname}`);
}

/** Starts the peer; resolves once it listens. */
export async function startLogsIngestionEmulator(
  options: LogsIngestionEmulatorOptions = {},
): Promise<LogsIngestionEmulator> {
  const host = options.host ?? "127.0.0.1";
  const logger = options.logger ?? silentLogger();
  const identity = await generateLocalTlsIdentity({ commonName: "sef local logs ingestion peer", validDays: 30 });
  const ownsCaFile = options.caCertPath === undefined;
  const caCertPath =
    options.caCertPath ?? join(tmpdir(), `sef-logs-ingestion-ca-${process.pid}-${randomBytes(4).toString("hex")}.pem`);
  writeFileSync(caCertPath, identity.certPem);

  const state: PeerState = {
    ruleId: options.ruleId ?? defaultLocalRuleId,
    streamName: options.streamName ?? contractStreamName,
    columns: options.columns ?? streamColumns(),
    ruleWindow: new RuleWindow({ ...azureRuleLimits, ...options.limits }),
    authorizedClientIds: options.authorizedClientIds ? new Set(options.authorizedClientIds) : undefined,
    monotonicNowMs: options.monotonicNowMs ?? (() => performance.now()),
    undeclaredColumns: {},
    mistypedColumns: {},
    nonObjectRows: 0,
    rows: [],
    sizes: [],
    uncompressedSizes: [],
    statuses: {},
    faults: new FaultQueue(),
    logger,
  };
  const server: Server = createServer({ cert: identity.certPem, key: identity.keyPem }, (req, res) => {
    handle(state, req, res).catch((err: unknown) => {
      logger.error({ err }, "logs ingestion peer failed to answer");
      if (!res.headersSent) sendError(res, 500, "InternalServerError", "peer error");
      else res.destroy();
    });
  });
  const port = await listen(server, options.port ?? 0, host);
  const endpointHost = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host.includes(":") ? `[${host}]` : host;

  return {
    endpoint: `https://${endpointHost}:${port}`,
    port,
    ruleId: state.ruleId,
    streamName: state.streamName,
    caCertPath,
    rows: () => state.rows,
    droppedColumns: () => drops(state),
    requests: () => ({
      count: state.sizes.length,
      sizes: [...state.sizes],
      uncompressedSizes: [...state.uncompressedSizes],
      statuses: { ...state.statuses },
    }),
    faults: {
      failNext: (n, fault) => state.faults.failNext(n, fault),
      clear: () => state.faults.clear(),
      pending: () => state.faults.pending(),
    },
    close: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      if (ownsCaFile) rmSync(caCertPath, { force: true });
    },
  };
}
