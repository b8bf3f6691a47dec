// The local Logs Ingestion peer: an HTTPS server speaking the Logs Ingestion API (POST rows to a DCR stream)
// that checks tokens, size and the stream's columns like the service, keeps what it accepts, and injects faults.
import { randomBytes } from "node:crypto";
import { rmSync, writeFileSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { createServer, type Server } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { gunzip as gunzipCallback } from "node:zlib";
import type { Logger } from "pino";
import { listen } from "../../support/listen.js";
import { streamName as contractStreamName, validateRow } from "../../../contract/stream-schema.js";
import { silentLogger } from "../../support/logger.js";
import { verifyLocalToken } from "../local-tokens.js";
import { generateLocalTlsIdentity } from "./certificate.js";
import { FaultQueue, parseFaultSpec, type Fault } from "./faults.js";

const gunzip = promisify(gunzipCallback);

/** The only api-version the service (and this peer) accepts. */
export const logsIngestionApiVersion = "2023-01-01";
/** Token audience of the Logs Ingestion API. */
export const logsIngestionAudience = "https://monitor.azure.com";
/** Largest request body accepted, as received (compressed), in bytes. */
export const maxRequestBodyBytes = 1024 * 1024;
/** A DCR immutable id shaped like the real ones, used when none is given. */
export const defaultLocalRuleId = "dcr-00000000000000000000000000000000";
/** Bodies larger than this are not even drained: the connection is dropped. */
const maxDrainBytes = 64 * 1024 * 1024;
/** Bad rows named in a 400 message. */
const maxRowsNamed = 10;

export interface LogsIngestionEmulatorOptions {
  /** TCP port; 0 (default) picks a free one. */
  readonly port?: number;
  /** Listen address (default 127.0.0.1). */
  readonly host?: string;
  /** Immutable id of the one DCR this peer serves (default `dcr-000…0`). */
  readonly ruleId?: string;
  /** The one stream the DCR declares (default `Custom-ScheduledEvents`). */
  readonly streamName?: string;
  /** Where to write the certificate clients must trust (default: a temporary file removed on close). */
  readonly caCertPath?: string;
  readonly logger?: Logger;
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
  /** Every row accepted so far, in arrival order. */
  rows(): readonly Record<string, unknown>[];
  requests(): LogsIngestionRequestStats;
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
  readonly rows: Record<string, unknown>[];
  readonly sizes: number[];
  readonly uncompressedSizes: number[];
  readonly statuses: Record<string, number>;
  readonly faults: FaultQueue;
  readonly logger: Logger;
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = body === undefined ? "" : JSON.stringify(body);
  res.writeHead(status, { ...(text ? { "content-type": "application/json" } : {}), "content-length": Buffer.byteLength(text), ...headers });
  res.end(text);
}

function sendError(res: ServerResponse, status: number, code: string, message: string, headers: Record<string, string> = {}): void {
  sendJson(res, status, { error: { code, message } }, headers);
}

/** Reads the body; `tooLarge` once it passes `limitBytes` (the rest is drained, not kept). */
async function readBody(req: IncomingMessage, limitBytes: number): Promise<{ body: Buffer; receivedBytes: number; tooLarge: boolean }> {
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

async function handleIngest(state: PeerState, req: IncomingMessage, res: ServerResponse, url: URL, match: RegExpExecArray): Promise<void> {
  const { body, receivedBytes, tooLarge } = await readBody(req, maxRequestBodyBytes);
  state.sizes.push(receivedBytes);

  const fault = state.faults.take();
  if (fault) {
    if (fault.delayMs) await sleep(fault.delayMs);
    if (fault.reset) {
      count(state, "reset");
      req.socket.destroy();
      return;
    }
    if (fault.status !== undefined) {
      count(state, fault.status);
      sendError(res, fault.status, fault.status === 429 ? "TooManyRequests" : "ServiceError", `injected fault: HTTP ${fault.status}`, { ...fault.headers });
      return;
    }
  }

  const answer = (status: number, code: string, message: string): void => {
    count(state, status);
    sendError(res, status, code, message);
  };
  const authorization = req.headers.authorization ?? "";
  const token = /^Bearer\s+(\S+)$/i.exec(authorization)?.[1];
  if (!token) return answer(401, "InvalidAuthenticationToken", "a bearer token is required");
  const check = verifyLocalToken(token, logsIngestionAudience);
  if (!check.ok) return answer(401, "InvalidAuthenticationToken", check.reason);

  const ruleId = decodeURIComponent(match[1]!);
  const stream = decodeURIComponent(match[2]!);
  if (ruleId !== state.ruleId) return answer(404, "NotFound", `data collection rule ${ruleId} was not found`);
  if (stream !== state.streamName) return answer(404, "InvalidStream", `stream ${stream} is not declared in data collection rule ${ruleId}`);
  if (url.searchParams.get("api-version") !== logsIngestionApiVersion) {
    return answer(400, "UnsupportedApiVersion", `api-version must be ${logsIngestionApiVersion}`);
  }
  if (tooLarge) return answer(413, "ContentLengthLimitExceeded", `request body of ${receivedBytes} bytes exceeds ${maxRequestBodyBytes} bytes`);

  let text: string;
  try {
    const encoding = (req.headers["content-encoding"] ?? "").toLowerCase();
    const raw = encoding === "gzip" ? await gunzip(body) : body;
    state.uncompressedSizes.push(raw.length);
    text = raw.toString("utf8");
  } catch (err) {
    return answer(400, "InvalidContentEncoding", `body is not valid gzip: ${(err as Error).message}`);
  }
  let rows: unknown;
  try {
    rows = JSON.parse(text);
  } catch (err) {
    return answer(400, "InvalidPayload", `body is not JSON: ${(err as Error).message}`);
  }
  if (!Array.isArray(rows)) return answer(400, "InvalidPayload", "body must be a JSON array of rows");

  const bad: string[] = [];
  let badCount = 0;
  rows.forEach((row, index) => {
    const problems = validateRow(row);
    if (problems.length === 0) return;
    badCount += 1;
    if (bad.length < maxRowsNamed) bad.push(`row ${index}: ${problems.join("; ")}`);
  });
  if (badCount > 0) {
    const more = badCount > bad.length ? ` (and ${badCount - bad.length} more rows)` : "";
    return answer(400, "InvalidStream", `${badCount} of ${rows.length} rows do not match stream ${state.streamName}: ${bad.join(" | ")}${more}`);
  }
  for (const row of rows as Record<string, unknown>[]) state.rows.push(row);
  count(state, 204);
  res.writeHead(204);
  res.end();
}

async function handle(state: PeerState, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? "/", "https://peer.local");
  const ingest = /^\/dataCollectionRules\/([^/]+)\/streams\/([^/]+)$/.exec(url.pathname);
  if (ingest && req.method === "POST") return handleIngest(state, req, res, url, ingest);
  if (req.method === "GET" && url.pathname === "/__peer/rows") return sendJson(res, 200, state.rows);
  if (req.method === "GET" && url.pathname === "/__peer/requests") {
    return sendJson(res, 200, { count: state.sizes.length, sizes: state.sizes, uncompressedSizes: state.uncompressedSizes, statuses: state.statuses });
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
export async function startLogsIngestionEmulator(options: LogsIngestionEmulatorOptions = {}): Promise<LogsIngestionEmulator> {
  const host = options.host ?? "127.0.0.1";
  const logger = options.logger ?? silentLogger();
  const identity = await generateLocalTlsIdentity();
  const ownsCaFile = options.caCertPath === undefined;
  const caCertPath = options.caCertPath ?? join(tmpdir(), `sef-logs-ingestion-ca-${process.pid}-${randomBytes(4).toString("hex")}.pem`);
  writeFileSync(caCertPath, identity.certPem);

  const state: PeerState = {
    ruleId: options.ruleId ?? defaultLocalRuleId,
    streamName: options.streamName ?? contractStreamName,
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
    requests: () => ({ count: state.sizes.length, sizes: [...state.sizes], uncompressedSizes: [...state.uncompressedSizes], statuses: { ...state.statuses } }),
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
