// HTTP client for IMDS: the scheduled-events GET to a plain-http endpoint over plain-http-poller.ts (one kept-alive
// socket, http-parser-js), everything else (https, instance metadata, approvals) over Node's own node:http.
// Metadata header, api-version, no proxy, no redirects, body-size cap, one total deadline per request, first-call
// timeout long enough for the service's documented 2-minute enable delay, a 5 req/s ceiling, and conditional polls
// (If-None-Match with the last ETag; a 304 or an unchanged body hands back the last parsed document). One call is one
// request: the poll stage owns retries (pipeline/poll-stage.ts, over @sef/retry's policy), nothing retries in here.
// A poll a second is the agent's whole idle cost, so the common path builds nothing it can reuse: request options and
// headers are made once per endpoint, and one timer is the deadline.
import type { Agent as HttpAgent, IncomingMessage, RequestOptions } from "node:http";
import { nodeHttp } from "../util/node-http.js";
import type { Clock } from "@sef/runtime/clock.js";
import type { VmIdentity } from "@sef/contract/record.js";
import { SlidingWindowRateLimiter } from "./rate-limiter.js";
import { ImdsRequestError, classifyStatus } from "./errors.js";
import { parseRetryAfterMs } from "@sef/retry/retry-after.js";
import { settlesWithin } from "../util/deadline.js";
import {
  MalformedDocumentError,
  parseCompute,
  parseScheduledEventsDocument,
  type ScheduledEventsDocument,
} from "./document.js";
import { PlainHttpPoller, connectTimeoutCode, deadlineCode, type RequestOutcome } from "./plain-http-poller.js";
import type { ImdsAnswer } from "./response-reader.js";
import { plainGetBytes } from "./plain-request.js";

/** An idle kept-alive connection is closed after this long. */
const idleSocketMs = 30_000;

/**
 * Every Nth poll goes out without If-None-Match, so a service whose ETag failed to change with its document could
 * hold a stale view for at most this many polls.
 */
export const unconditionalPollEvery = 60;

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
  clock: Clock;
  /** Extra headers (tests use `X-Sef-Sim-Vm` to pick a simulated VM). */
  extraHeaders?: Record<string, string>;
  /** A discovered endpoint that replaces `imdsUrl` and hears about connection failures (see imds/discovery). */
  endpoint?: ImdsEndpointSource;
  /** Every Nth poll is sent without If-None-Match (default `unconditionalPollEvery`). */
  unconditionalEvery?: number;
  /**
   * Scheduled-events GETs to a plain-http endpoint go over plain-http-poller.ts (one kept-alive socket, no node:http
   * per request); default true. false sends them with node:http like everything else (tests compare the two).
   */
  plainHttpPoller?: boolean;
}

/** Supplies the base URL per request and learns whether connections succeed. */
export interface ImdsEndpointSource {
  current(): { url: string } | { error: string };
  connectionFailed(): void;
  answered(): void;
}

/** Error codes that mean the endpoint could not be reached (discovery hears of them and may look again). */
const connectionFailureCodes = new Set([
  "ECONNREFUSED",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EHOSTDOWN",
  "ECONNRESET",
  "EPIPE",
  connectTimeoutCode,
]);

export const imdsDefaults = {
  imdsUrl: "http://169.254.169.254",
  apiVersion: "2020-07-01",
  computeApiVersion: "2021-02-01",
  firstCallTimeoutMs: 130_000,
  requestTimeoutMs: 10_000,
  connectTimeoutMs: 10_000,
  maxBodyBytes: 1024 * 1024,
  unconditionalEvery: unconditionalPollEvery,
  plainHttpPoller: true,
} as const;

export interface FetchedDocument {
  /** The same object as the last call's when the document did not change (304, or the same body again). */
  document: ScheduledEventsDocument;
  /** The body as received (kept for diagnostics and change detection). */
  body: string;
  /** The service answered 304 Not Modified to If-None-Match: `document` and `body` are the last ones. */
  notModified: boolean;
}

/** What conditional polling saved so far (counted, read when scraped). */
export interface ConditionalPollCounts {
  /** Answers 304 Not Modified. */
  notModified: number;
  /** Answers 200 whose body equalled the last one (parsed once, not again). */
  unchangedBodies: number;
}

/** The request options of one route on one endpoint, built once (node:http copies them per request). */
interface Route {
  readonly options: RequestOptions;
  readonly https: boolean;
  readonly pathname: string;
  /** The whole GET as bytes for the plain-http poller (plain http only, and only when every header is sendable). */
  readonly plainRequest?: Buffer;
}

interface LastEvents {
  readonly document: ScheduledEventsDocument;
  readonly body: string;
  /** The ETag it came with, and the request options that send it back (built once per ETag). */
  readonly etag: string | undefined;
  readonly conditional: Route | undefined;
}

export class ImdsClient {
  /** Dedicated agents, never the global ones, so proxy settings (NODE_USE_ENV_PROXY, HTTP_PROXY) cannot route IMDS traffic. */
  private readonly httpAgent: HttpAgent;
  private https: Promise<{ request: typeof nodeHttp.request; agent: HttpAgent }> | undefined;
  private readonly inFlight = new Set<Promise<unknown>>();
  private closed = false;
  private readonly limiter: SlidingWindowRateLimiter;
  private readonly options: Required<Omit<ImdsClientOptions, "extraHeaders" | "endpoint">> & {
    extraHeaders: Record<string, string>;
  };
  private readonly endpoint: ImdsEndpointSource | undefined;
  private answeredOnce = false;
  private lastStartMs: number | undefined;
  private routes: { base: string; events: Route; compute: Route; post: Route } | undefined;
  private lastEvents: LastEvents | undefined;
  /** The plain-http endpoint's poller (replaced with the endpoint). */
  private poller: PlainHttpPoller | undefined;
  private pollsSinceUnconditional = 0;
  private readonly counts = { notModified: 0, unchangedBodies: 0 };
  /** Per caller signal, the requests to end when it aborts: one listener per signal, not one per request. */
  private readonly abortWatchers = new WeakMap<AbortSignal, Set<() => void>>();

  constructor(options: ImdsClientOptions) {
    this.options = { ...imdsDefaults, extraHeaders: {}, ...stripUndefined(options) } as typeof this.options;
    this.httpAgent = new nodeHttp.Agent({ keepAlive: true, maxSockets: 2, timeout: idleSocketMs });
    this.limiter = new SlidingWindowRateLimiter(options.clock, 5, 1000);
    this.endpoint = options.endpoint;
  }

  /** GET scheduled events: one request; a failure throws ImdsRequestError (its `retryable` and hint tell the caller). */
  getScheduledEvents(signal?: AbortSignal): Promise<FetchedDocument> {
    return this.fetchEvents(signal);
  }

  /** GET instance/compute → VM identity: one request; a failure throws ImdsRequestError. */
  async getCompute(signal?: AbortSignal): Promise<VmIdentity> {
    const answer = await this.send((routes) => routes.compute, signal, undefined);
    const text = this.expectOk(answer, "/metadata/instance/compute");
    try {
      return parseCompute(text);
    } catch (err) {
      throw new ImdsRequestError("malformed", `malformed compute document: ${(err as Error).message}`, 200);
    }
  }

  /** POST StartRequests (approval). Returns the status and body; network failures throw ImdsRequestError. */
  async postStartRequests(
    eventIds: readonly string[],
    signal?: AbortSignal,
  ): Promise<{ status: number; body: string }> {
    const body = JSON.stringify({ StartRequests: eventIds.map((EventId) => ({ EventId })) });
    const answer = await this.send((routes) => routes.post, signal, body);
    return { status: answer.status, body: answer.text };
  }

  /** When the last scheduled-events request actually went out (after any rate-limit wait). */
  get lastRequestStartedMs(): number | undefined {
    return this.lastStartMs;
  }

  /** 304 answers and unchanged bodies so far. */
  get conditionalCounts(): Readonly<ConditionalPollCounts> {
    return this.counts;
  }

  /** Closes the connections; a request still in flight after `timeoutMs` is cut off. Later requests fail. */
  async close(timeoutMs = 1000): Promise<void> {
    this.closed = true;
    await settlesWithin(Promise.all(this.inFlight), timeoutMs);
    this.httpAgent.destroy();
    this.poller?.close();
    if (this.https) (await this.https).agent.destroy();
  }

  private async fetchEvents(signal: AbortSignal | undefined): Promise<FetchedDocument> {
    const last = this.lastEvents;
    const conditional =
      last?.conditional !== undefined && this.pollsSinceUnconditional < this.options.unconditionalEvery - 1;
    this.pollsSinceUnconditional = conditional ? this.pollsSinceUnconditional + 1 : 0;
    const answer = await this.send(
      (routes) => (conditional ? last!.conditional! : routes.events),
      signal,
      undefined,
      true,
    );
    if (answer.status === 304 && last !== undefined) {
      this.counts.notModified += 1;
      return { document: last.document, body: last.body, notModified: true };
    }
    const text = this.expectOk(answer, "/metadata/scheduledevents");
    const etag =
      typeof answer.headers.etag === "string" && answer.headers.etag !== "" ? answer.headers.etag : undefined;
    let document: ScheduledEventsDocument;
    if (last !== undefined && text === last.body) {
      this.counts.unchangedBodies += 1;
      document = last.document;
    } else {
      try {
        document = parseScheduledEventsDocument(text);
      } catch (err) {
        if (err instanceof MalformedDocumentError)
          throw new ImdsRequestError("malformed", `malformed scheduled events document: ${err.message}`, 200);
        throw err;
      }
    }
    if (last === undefined || last.document !== document || last.etag !== etag) {
      const events = this.routes!.events;
      const conditionalRoute = etag === undefined ? undefined : withHeader(events, "If-None-Match", etag);
      this.lastEvents = { document, body: text, etag, conditional: conditionalRoute };
    }
    return { document, body: text, notModified: false };
  }

  /** The body of a 200 answer; any other status is an ImdsRequestError (with the Retry-After hint, if any). */
  private expectOk(answer: ImdsAnswer, pathname: string): string {
    if (answer.status === 200) return answer.text;
    const retryAfterMs = parseRetryAfterMs(answer.headers["retry-after"], this.options.clock.now());
    throw new ImdsRequestError(
      classifyStatus(answer.status),
      `IMDS answered ${answer.status} for ${pathname}: ${answer.text.slice(0, 300)}`,
      answer.status,
      retryAfterMs,
    );
  }

  /** The request options of each route on the current endpoint (rebuilt only when the endpoint changes). */
  private routesFor(base: string): NonNullable<ImdsClient["routes"]> {
    if (this.routes?.base === base) return this.routes;
    const { apiVersion, computeApiVersion, extraHeaders } = this.options;
    const url = new URL(base);
    const https = url.protocol === "https:";
    const hostname = url.hostname.replace(/^\[|\]$/g, ""); // an IPv6 literal without its brackets
    const route = (method: string, path: string, headers: Record<string, string>): Route => {
      const target = new URL(path, url);
      const options: RequestOptions = {
        protocol: url.protocol,
        hostname,
        port: url.port,
        method,
        path: `${target.pathname}${target.search}`,
        headers,
      };
      return { options, https, pathname: target.pathname };
    };
    this.poller?.retire(); // a request in flight to the old endpoint finishes there, as with node:http
    this.poller = undefined;
    if (!https && this.options.plainHttpPoller) {
      const { connectTimeoutMs, maxBodyBytes } = this.options;
      this.poller = new PlainHttpPoller({
        host: hostname,
        port: Number(url.port || 80),
        connectTimeoutMs,
        maxBodyBytes,
        idleSocketMs,
      });
    }
    const headers = { ...extraHeaders, Metadata: "true" };
    const eventsPath = `/metadata/scheduledevents?api-version=${encodeURIComponent(apiVersion)}`;
    this.routes = {
      base,
      events: withPlainRequest(route("GET", eventsPath, headers), this.poller !== undefined),
      compute: route("GET", `/metadata/instance/compute?api-version=${encodeURIComponent(computeApiVersion)}`, headers),
      post: route("POST", eventsPath, { ...headers, "Content-Type": "application/json" }),
    };
    this.lastEvents = undefined; // a new endpoint: its ETags mean nothing to the last one's documents
    return this.routes;
  }

  /**
   * One request within the rate limit and one total deadline, from connect to the body's last byte (a per-read
   * socket timeout would restart on every byte, so a server trickling its body could hold a poll forever).
   */
  private async send(
    pick: (routes: NonNullable<ImdsClient["routes"]>) => Route,
    signal: AbortSignal | undefined,
    body: string | undefined,
    isPoll = false,
  ): Promise<ImdsAnswer> {
    if (!this.limiter.tryAcquire()) await this.limiter.acquire(signal);
    if (isPoll) this.lastStartMs = this.options.clock.monotonicMs();
    const base = this.endpoint?.current() ?? { url: this.options.imdsUrl };
    if ("error" in base) throw new ImdsRequestError("no_endpoint", `IMDS endpoint unknown: ${base.error}`);
    const route = pick(this.routesFor(base.url));
    const method = route.options.method!;
    if (this.closed)
      throw new ImdsRequestError("network_error", `IMDS ${method} ${route.pathname} not sent: the client is closed`);
    const timeoutMs = this.answeredOnce ? this.options.requestTimeoutMs : this.options.firstCallTimeoutMs;
    const outcome =
      route.plainRequest !== undefined && this.poller !== undefined && !this.poller.busy
        ? this.plainGet(this.poller, route.plainRequest, signal, timeoutMs)
        : this.exchangeFor(route, body, signal, timeoutMs);
    this.inFlight.add(outcome);
    const result = await outcome;
    this.inFlight.delete(outcome);
    if (result.ok) {
      this.endpoint?.answered();
      if (result.answer.status === 200 || result.answer.status === 304) this.answeredOnce = true;
      return result.answer;
    }
    throw this.requestFailure(result.error, method, route.pathname, timeoutMs, signal);
  }

  /** One request with node:http (or node:https). */
  private async exchangeFor(
    route: Route,
    body: string | undefined,
    signal: AbortSignal | undefined,
    timeoutMs: number,
  ): Promise<RequestOutcome> {
    const transport = route.https ? await this.httpsTransport() : { request: nodeHttp.request, agent: this.httpAgent };
    const options =
      body === undefined
        ? route.options
        : {
            ...route.options,
            headers: { ...route.options.headers, "Content-Length": String(Buffer.byteLength(body)) },
          };
    return this.exchange(transport.request, { ...options, agent: transport.agent }, body, signal, timeoutMs);
  }

  /** The scheduled-events GET over the plain-http poller's kept-alive socket. */
  private plainGet(
    poller: PlainHttpPoller,
    request: Buffer,
    signal: AbortSignal | undefined,
    timeoutMs: number,
  ): Promise<RequestOutcome> {
    if (signal === undefined) return poller.get(request, timeoutMs);
    if (signal.aborted) return Promise.resolve({ ok: false, error: signal.reason as NodeJS.ErrnoException });
    return poller.get(request, timeoutMs, (onAbort) => this.watchAbort(signal, () => onAbort(signal.reason)));
  }

  /** Classifies a failed exchange (the signal's abort is passed through as it is: the caller is stopping). */
  private requestFailure(
    err: NodeJS.ErrnoException,
    method: string,
    pathname: string,
    timeoutMs: number,
    signal: AbortSignal | undefined,
  ): Error {
    if (err instanceof ImdsRequestError) return err;
    if (signal?.aborted) return err;
    const code = err.code ?? "";
    if (connectionFailureCodes.has(code)) this.endpoint?.connectionFailed();
    if (code === deadlineCode) {
      const during = (err as { headersReceived?: boolean }).headersReceived
        ? "IMDS answer did not complete"
        : `IMDS did not answer ${method} ${pathname}`;
      return new ImdsRequestError("timeout", `${during} within ${timeoutMs} ms`);
    }
    if (code === connectTimeoutCode)
      return new ImdsRequestError(
        "timeout",
        `IMDS did not answer ${method} ${pathname} within ${this.options.connectTimeoutMs} ms`,
      );
    return new ImdsRequestError("network_error", `IMDS ${method} ${pathname} failed: ${code || err.message}`);
  }

  /**
   * Sends one request and reads its whole answer; never rejects. One timer is the total deadline; the signal, once
   * aborted, destroys the request and its body.
   */
  private exchange(
    request: typeof nodeHttp.request,
    options: RequestOptions,
    body: string | undefined,
    signal: AbortSignal | undefined,
    timeoutMs: number,
  ): Promise<RequestOutcome> {
    const { maxBodyBytes, connectTimeoutMs } = this.options;
    return new Promise<RequestOutcome>((resolve) => {
      if (signal?.aborted) return resolve({ ok: false, error: signal.reason as NodeJS.ErrnoException });
      let done = false;
      let headersReceived = false;
      const finish = (outcome: RequestOutcome): void => {
        if (done) return;
        done = true;
        clearTimeout(deadline);
        unwatch?.();
        if (!outcome.ok) req.destroy();
        resolve(outcome);
      };
      const fail = (error: unknown): void => finish({ ok: false, error: error as NodeJS.ErrnoException });
      const deadline = setTimeout(
        () =>
          fail(Object.assign(new Error(`deadline of ${timeoutMs} ms passed`), { code: deadlineCode, headersReceived })),
        timeoutMs,
      );
      const unwatch = signal ? this.watchAbort(signal, () => fail(signal.reason ?? new Error("aborted"))) : undefined;
      // Every listener above runs later (timers, events): `req` is set by then.
      const req = request(options, (res) => {
        headersReceived = true;
        readAnswer(res, maxBodyBytes, finish);
      });
      req.on("error", fail);
      req.once("socket", (socket) => {
        if (!socket.connecting) return; // a kept-alive connection
        const timer = setTimeout(
          () =>
            fail(
              Object.assign(new Error(`connection not open after ${connectTimeoutMs} ms`), {
                code: connectTimeoutCode,
              }),
            ),
          connectTimeoutMs,
        );
        const clear = (): void => clearTimeout(timer);
        socket.once("connect", clear);
        socket.once("close", clear);
      });
      req.end(body);
    });
  }

  /** Calls `onAbort` when `signal` aborts, until the returned function is called. */
  private watchAbort(signal: AbortSignal, onAbort: () => void): () => void {
    let watchers = this.abortWatchers.get(signal);
    if (watchers === undefined) {
      const created = new Set<() => void>();
      signal.addEventListener(
        "abort",
        () => {
          for (const watcher of [...created]) watcher();
        },
        { once: true },
      );
      this.abortWatchers.set(signal, created);
      watchers = created;
    }
    const set = watchers;
    set.add(onAbort);
    return () => set.delete(onAbort);
  }

  /** node:https (and its own agent) load only for an https:// endpoint. */
  private httpsTransport(): Promise<{ request: typeof nodeHttp.request; agent: HttpAgent }> {
    this.https ??= import("node:https").then(({ Agent, request }) => ({
      request: request as typeof nodeHttp.request,
      agent: new Agent({ keepAlive: true, maxSockets: 2, timeout: idleSocketMs }),
    }));
    return this.https;
  }
}

/** Reads a whole answer within the body cap (declared or streamed); `finish` hears the outcome once. */
function readAnswer(res: IncomingMessage, maxBodyBytes: number, finish: (outcome: RequestOutcome) => void): void {
  const status = res.statusCode ?? 0;
  const tooLarge = (detail: string): void => {
    finish({
      ok: false,
      error: new ImdsRequestError(
        "too_large",
        `IMDS body ${detail} the ${maxBodyBytes}-byte cap`,
        status,
      ) as unknown as NodeJS.ErrnoException,
    });
  };
  const declared = Number(res.headers["content-length"]);
  if (Number.isFinite(declared) && declared > maxBodyBytes) return tooLarge(`of ${declared} bytes exceeds`);
  const chunks: Buffer[] = [];
  let size = 0;
  let ended = false;
  res.on("data", (chunk: Buffer) => {
    size += chunk.length;
    if (size > maxBodyBytes) return tooLarge("exceeds");
    chunks.push(chunk);
  });
  res.on("end", () => {
    ended = true;
    const text = chunks.length === 1 ? chunks[0]!.toString("utf8") : Buffer.concat(chunks).toString("utf8");
    finish({ ok: true, answer: { status, headers: res.headers, text } });
  });
  res.on("error", (err) =>
    finish({
      ok: false,
      error: Object.assign(new Error(`reading the IMDS body failed: ${err.message}`), {
        code: (err as NodeJS.ErrnoException).code,
      }),
    }),
  );
  res.on("close", () => {
    if (!ended)
      finish({ ok: false, error: Object.assign(new Error("the answer was cut off"), { code: "ECONNRESET" }) });
  });
}

/** The route with one more header (its plain-http request rebuilt to match, if it had one). */
function withHeader(route: Route, name: string, value: string): Route {
  const options = {
    ...route.options,
    headers: { ...(route.options.headers as Record<string, string>), [name]: value },
  };
  return withPlainRequest({ options, https: route.https, pathname: route.pathname }, route.plainRequest !== undefined);
}

/** Adds the GET's bytes for the plain-http poller when `wanted` and every header can be sent as it is. */
function withPlainRequest(route: Route, wanted: boolean): Route {
  if (!wanted) return route;
  const { hostname, port, path, headers } = route.options;
  const plainRequest = plainGetBytes(
    hostname!,
    port === undefined || port === "" ? undefined : Number(port),
    path!,
    headers as Record<string, string>,
  );
  return plainRequest === undefined ? route : { ...route, plainRequest };
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
