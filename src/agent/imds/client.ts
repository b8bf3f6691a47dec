// HTTP client for IMDS (Node's own node:http, whose parser is native: no WebAssembly, nothing loaded from npm):
// Metadata header, api-version, no proxy, no redirects, body-size cap, one total deadline per request, first-call
// timeout long enough for the service's documented 2-minute enable delay, and a 5 req/s ceiling.
import type { Agent as HttpAgent, IncomingHttpHeaders, IncomingMessage, RequestOptions, ClientRequest } from "node:http";
import { nodeHttp } from "../util/node-http.js";
import pRetry, { AbortError } from "p-retry";
import type { Clock } from "../util/clock.js";
import type { VmIdentity } from "@sef/contract/record.js";
import { SlidingWindowRateLimiter } from "./rate-limiter.js";
import { ImdsRequestError, classifyStatus } from "./errors.js";
import { parseRetryAfterMs } from "../util/retry-after.js";
import { settlesWithin } from "../util/deadline.js";
import { MalformedDocumentError, parseCompute, parseScheduledEventsDocument, type ScheduledEventsDocument } from "./document.js";

/** Code of the error raised when a connection does not open within `connectTimeoutMs`. */
const connectTimeoutCode = "SEF_CONNECT_TIMEOUT";

/** An idle kept-alive connection is closed after this long. */
const idleSocketMs = 30_000;

export interface ImdsClientOptions {
  /** Base URL of IMDS, default `http://169.254.169.254`. */
  imdsUrl: string;
  /** Scheduled events api-version, default `2020-07-01`. */
  apiVersion: string;
  /** api-version for instance/compute. */
  computeApiVersion?: string;
  /** Timeout of a request until the first successful answer (the service may take up to 2 minutes to enable). */
  firstCallTimeoutMs?: number;
  /** Timeout of later requests. */
  requestTimeoutMs?: number;
  /** Longest wait for a new TCP (or TLS) connection to open, within the request's own deadline. */
  connectTimeoutMs?: number;
  /** Largest body accepted, in bytes. */
  maxBodyBytes?: number;
  /** Immediate retries of a transient failure within one call (p-retry). */
  retries?: number;
  retryMinDelayMs?: number;
  retryMaxDelayMs?: number;
  clock: Clock;
  /** Extra headers (tests use `X-Sef-Sim-Vm` to pick a simulated VM). */
  extraHeaders?: Record<string, string>;
  /** Told about each failed attempt that will be retried at once (for logs and metrics). */
  onRetry?: (error: ImdsRequestError, attempt: number) => void;
  /** A discovered endpoint that replaces `imdsUrl` and hears about connection failures (see imds/discovery). */
  endpoint?: ImdsEndpointSource;
}

/** Supplies the base URL per request and learns whether connections succeed. */
export interface ImdsEndpointSource {
  current(): { url: string } | { error: string };
  connectionFailed(): void;
  answered(): void;
}

/** Error codes that mean the endpoint could not be reached (discovery hears of them and may look again). */
const connectionFailureCodes = new Set(["ECONNREFUSED", "EHOSTUNREACH", "ENETUNREACH", "EHOSTDOWN", "ECONNRESET", "EPIPE", connectTimeoutCode]);

export const imdsDefaults = {
  imdsUrl: "http://169.254.169.254",
  apiVersion: "2020-07-01",
  computeApiVersion: "2021-02-01",
  firstCallTimeoutMs: 130_000,
  requestTimeoutMs: 10_000,
  connectTimeoutMs: 10_000,
  maxBodyBytes: 1024 * 1024,
  retries: 2,
  retryMinDelayMs: 200,
  retryMaxDelayMs: 2_000,
} as const;

export interface FetchedDocument {
  document: ScheduledEventsDocument;
  /** The body as received (kept for diagnostics and change detection). */
  body: string;
}

/** An answer whose headers arrived; its body is still to be read. */
interface ImdsResponse {
  readonly statusCode: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: IncomingMessage;
}

interface Transport {
  readonly request: (url: URL, options: RequestOptions, onResponse: (res: IncomingMessage) => void) => ClientRequest;
  readonly agent: HttpAgent;
}

export class ImdsClient {
  /** Dedicated agents, never the global ones, so proxy settings (NODE_USE_ENV_PROXY, HTTP_PROXY) cannot route IMDS traffic. */
  private readonly httpAgent: HttpAgent;
  private https: Promise<Transport> | undefined;
  private readonly inFlight = new Set<Promise<unknown>>();
  private closed = false;
  private readonly limiter: SlidingWindowRateLimiter;
  private readonly options: Required<Omit<ImdsClientOptions, "extraHeaders" | "onRetry" | "endpoint">> & { extraHeaders: Record<string, string> };
  private readonly onRetry: ImdsClientOptions["onRetry"];
  private readonly endpoint: ImdsEndpointSource | undefined;
  private answeredOnce = false;
  private lastStartMs: number | undefined;

  constructor(options: ImdsClientOptions) {
    this.options = { ...imdsDefaults, extraHeaders: {}, ...stripUndefined(options) } as typeof this.options;
    this.httpAgent = new nodeHttp.Agent({ keepAlive: true, maxSockets: 2, timeout: idleSocketMs });
    this.limiter = new SlidingWindowRateLimiter(options.clock, 5, 1000);
    this.onRetry = options.onRetry;
    this.endpoint = options.endpoint;
  }

  /** GET scheduled events; retries transient failures a few times, then throws ImdsRequestError. */
  async getScheduledEvents(signal?: AbortSignal): Promise<FetchedDocument> {
    return this.withRetries(async () => {
      const body = await this.get(`/metadata/scheduledevents?api-version=${encodeURIComponent(this.options.apiVersion)}`, signal);
      try {
        return { document: parseScheduledEventsDocument(body), body };
      } catch (err) {
        if (err instanceof MalformedDocumentError) throw new ImdsRequestError("malformed", `malformed scheduled events document: ${err.message}`, 200);
        throw err;
      }
    }, signal);
  }

  /** GET instance/compute → VM identity. */
  async getCompute(signal?: AbortSignal): Promise<VmIdentity> {
    return this.withRetries(async () => {
      const body = await this.get(`/metadata/instance/compute?api-version=${encodeURIComponent(this.options.computeApiVersion)}`, signal);
      try {
        return parseCompute(body);
      } catch (err) {
        throw new ImdsRequestError("malformed", `malformed compute document: ${(err as Error).message}`, 200);
      }
    }, signal);
  }

  /** POST StartRequests (approval). Returns the status and body; network failures throw ImdsRequestError. */
  async postStartRequests(eventIds: readonly string[], signal?: AbortSignal): Promise<{ status: number; body: string }> {
    await this.limiter.acquire(signal);
    const body = JSON.stringify({ StartRequests: eventIds.map((EventId) => ({ EventId })) });
    const deadline = this.requestDeadline();
    const response = await this.send("POST", `/metadata/scheduledevents?api-version=${encodeURIComponent(this.options.apiVersion)}`, signal, body, deadline);
    return { status: response.statusCode, body: await this.readBody(response, deadline) };
  }

  /** When the last scheduled-events request actually went out (after any rate-limit wait). */
  get lastRequestStartedMs(): number | undefined {
    return this.lastStartMs;
  }

  /** Closes the connections; a request still in flight after `timeoutMs` is cut off. Later requests fail. */
  async close(timeoutMs = 1000): Promise<void> {
    this.closed = true;
    await settlesWithin(Promise.all(this.inFlight), timeoutMs);
    this.httpAgent.destroy();
    if (this.https) (await this.https).agent.destroy();
  }

  private async withRetries<T>(fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    return pRetry(
      async () => {
        try {
          return await fn();
        } catch (err) {
          if (err instanceof ImdsRequestError && !err.retryable) throw new AbortError(err);
          throw err;
        }
      },
      {
        retries: this.options.retries,
        minTimeout: this.options.retryMinDelayMs,
        maxTimeout: this.options.retryMaxDelayMs,
        factor: 2,
        randomize: true,
        signal,
        onFailedAttempt: ({ error, attemptNumber, retriesLeft }) => {
          if (retriesLeft > 0 && error instanceof ImdsRequestError && error.retryable) this.onRetry?.(error, attemptNumber);
        },
      },
    );
  }

  private async get(path: string, signal?: AbortSignal): Promise<string> {
    await this.limiter.acquire(signal);
    if (path.startsWith("/metadata/scheduledevents")) this.lastStartMs = this.options.clock.monotonicMs();
    const deadline = this.requestDeadline();
    const response = await this.send("GET", path, signal, undefined, deadline);
    const text = await this.readBody(response, deadline);
    if (response.statusCode !== 200) {
      const retryAfterMs = parseRetryAfterMs(response.headers["retry-after"], this.options.clock.now());
      throw new ImdsRequestError(
        classifyStatus(response.statusCode),
        `IMDS answered ${response.statusCode} for ${path.split("?")[0]}: ${text.slice(0, 300)}`,
        response.statusCode,
        retryAfterMs,
      );
    }
    this.answeredOnce = true;
    return text;
  }

  /**
   * One total deadline per request, from connect to the body's last byte (a per-read socket timeout would restart on
   * every byte, so a server trickling its body could hold a poll forever). Timers are monotonic.
   */
  private requestDeadline(): { readonly timeoutMs: number; readonly signal: AbortSignal } {
    const timeoutMs = this.answeredOnce ? this.options.requestTimeoutMs : this.options.firstCallTimeoutMs;
    return { timeoutMs, signal: AbortSignal.timeout(timeoutMs) };
  }

  private async send(
    method: "GET" | "POST",
    path: string,
    signal: AbortSignal | undefined,
    body: string | undefined,
    deadline: { readonly timeoutMs: number; readonly signal: AbortSignal },
  ): Promise<ImdsResponse> {
    const timeoutMs = deadline.timeoutMs;
    const base = this.endpoint?.current() ?? { url: this.options.imdsUrl };
    if ("error" in base) throw new ImdsRequestError("no_endpoint", `IMDS endpoint unknown: ${base.error}`);
    const url = new URL(path, base.url);
    if (this.closed) throw new ImdsRequestError("network_error", `IMDS ${method} ${url.pathname} not sent: the client is closed`);
    const headers: Record<string, string> = { ...this.options.extraHeaders, Metadata: "true" };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      headers["Content-Length"] = String(Buffer.byteLength(body));
    }
    const exchange = (async () => {
      const transport = url.protocol === "https:" ? await this.httpsTransport() : { request: nodeHttp.request, agent: this.httpAgent };
      return this.exchange(transport, url, method, headers, body, signal ? AbortSignal.any([signal, deadline.signal]) : deadline.signal);
    })();
    this.track(exchange);
    try {
      const response = await exchange;
      this.endpoint?.answered();
      return response;
    } catch (err) {
      if (signal?.aborted) throw new AbortError(err as Error);
      const code = (err as { code?: string }).code ?? "";
      if (connectionFailureCodes.has(code)) this.endpoint?.connectionFailed();
      if (deadline.signal.aborted || code === connectTimeoutCode) {
        throw new ImdsRequestError("timeout", `IMDS did not answer ${method} ${url.pathname} within ${code === connectTimeoutCode ? this.options.connectTimeoutMs : timeoutMs} ms`);
      }
      throw new ImdsRequestError("network_error", `IMDS ${method} ${url.pathname} failed: ${code || (err as Error).message}`);
    }
  }

  /** Sends one request; resolves when the headers arrive. The signal, once aborted, destroys the request and its body. */
  private exchange(transport: Transport, url: URL, method: string, headers: Record<string, string>, body: string | undefined, signal: AbortSignal): Promise<ImdsResponse> {
    return new Promise<ImdsResponse>((resolve, reject) => {
      const req = transport.request(url, { method, headers, agent: transport.agent, signal }, (res) =>
        resolve({ statusCode: res.statusCode ?? 0, headers: res.headers, body: res }),
      );
      // Stays attached for the request's whole life: a later error (the body cut off) reaches the body's reader.
      req.on("error", reject);
      req.once("socket", (socket) => {
        if (!socket.connecting) return; // a kept-alive connection
        const timer = setTimeout(() => {
          req.destroy(Object.assign(new Error(`connection not open after ${this.options.connectTimeoutMs} ms`), { code: connectTimeoutCode }));
        }, this.options.connectTimeoutMs);
        const clear = (): void => clearTimeout(timer);
        socket.once("connect", clear);
        socket.once("close", clear);
      });
      req.end(body);
    });
  }

  /** node:https (and its own agent) load only for an https:// endpoint. */
  private httpsTransport(): Promise<Transport> {
    this.https ??= import("node:https").then(({ Agent, request }) => ({
      request: request as Transport["request"],
      agent: new Agent({ keepAlive: true, maxSockets: 2, timeout: idleSocketMs }),
    }));
    return this.https;
  }

  private track(work: Promise<unknown>): void {
    const settled = work.then(
      () => undefined,
      () => undefined,
    );
    this.inFlight.add(settled);
    void settled.then(() => this.inFlight.delete(settled));
  }

  private async readBody(response: ImdsResponse, deadline: { readonly timeoutMs: number; readonly signal: AbortSignal }): Promise<string> {
    const declared = Number(response.headers["content-length"]);
    if (Number.isFinite(declared) && declared > this.options.maxBodyBytes) {
      response.body.destroy();
      throw new ImdsRequestError("too_large", `IMDS body of ${declared} bytes exceeds the ${this.options.maxBodyBytes}-byte cap`, response.statusCode);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    const reading = (async () => {
      for await (const chunk of response.body) {
        size += (chunk as Buffer).length;
        if (size > this.options.maxBodyBytes) {
          response.body.destroy();
          throw new ImdsRequestError("too_large", `IMDS body exceeds the ${this.options.maxBodyBytes}-byte cap`, response.statusCode);
        }
        chunks.push(chunk as Buffer);
      }
    })();
    this.track(reading);
    try {
      await reading;
    } catch (err) {
      if (err instanceof ImdsRequestError) throw err;
      const code = (err as { code?: string }).code ?? "";
      if (deadline.signal.aborted) throw new ImdsRequestError("timeout", `IMDS answer did not complete within ${deadline.timeoutMs} ms`);
      throw new ImdsRequestError("network_error", `reading the IMDS body failed: ${code || (err as Error).message}`);
    }
    return Buffer.concat(chunks).toString("utf8");
  }
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
