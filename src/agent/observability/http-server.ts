// Observability HTTP endpoints (config section `metrics`): GET /metrics (Prometheus text), /healthz (liveness),
// /readyz (readiness from an injected snapshot, judged by the pure `evaluateReadiness`); connections and the time a
// client may take to send its request are bounded (the chart serves them on the node's IP).
import type { IncomingMessage, ServerResponse } from "node:http";
import * as z from "zod/mini";
import type { Logger } from "pino";
import { listen } from "@sef/runtime/listen.js";
import "../util/zod-locale.js";
import { documented } from "../util/setting-doc.js";
import { nodeHttp } from "../util/node-http.js";
import type { AgentMetrics } from "./metrics.js";

export const defaultMetricsPort = 9464;
export const defaultMaxSinkStuckMs = 10 * 60_000;
const minMaxPollAgeMs = 30_000;

export const metricsServerConfigSchema = z.strictObject({
  enabled: documented(z._default(z.boolean(), true), { description: "Serve `/metrics`, `/healthz` and `/readyz`." }),
  host: documented(z._default(z.string().check(z.minLength(1)), "127.0.0.1"), {
    description: "Listen address; keep the loopback default unless a scraper elsewhere needs it.",
  }),
  port: documented(z._default(z.number().check(z.int(), z.minimum(0), z.maximum(65535)), defaultMetricsPort), {
    description: "Listen port (0: a free port).",
  }),
  maxConnections: documented(z._default(z.number().check(z.int(), z.minimum(1), z.maximum(10_000)), 16), {
    description: "Connections open at once; one more is closed as soon as it is accepted.",
    unit: "connections",
  }),
  headersTimeoutMs: documented(z._default(z.number().check(z.int(), z.minimum(100), z.maximum(60_000)), 5000), {
    description: "Time a client has to send the request's headers; then it gets 408 and the connection is closed.",
  }),
  requestTimeoutMs: documented(z._default(z.number().check(z.int(), z.minimum(100), z.maximum(300_000)), 10_000), {
    description: "Time a client has to send its whole request (at least `headersTimeoutMs`).",
  }),
  keepAliveTimeoutMs: documented(z._default(z.number().check(z.int(), z.minimum(100), z.maximum(60_000)), 5000), {
    description: "An idle kept-alive connection is closed after this.",
  }),
});
export type MetricsServerConfig = z.infer<typeof metricsServerConfigSchema>;

/** What the agent reports about itself for /readyz. */
export interface ReadinessSnapshot {
  /** Milliseconds since the last successful poll; null before the first. */
  lastGoodPollAgeMs: number | null;
  storeWritable: boolean;
  /**
   * Per sink: how long it has delivered nothing while records wait for it (0 when idle or flowing); how many records
   * it dead-lettered since it last delivered one; the reason of a failure that needs an operator (auth, not found).
   */
  sinks: { name: string; stuckForMs: number; deadLetteredSinceDelivery?: number; needsOperator?: string | null }[];
  /** The IMDS endpoint in use and the discovery source that found it, or why there is none. */
  imdsEndpoint?: { url: string | null; source: string | null; error: string | null };
}

export interface ReadinessLimits {
  maxPollAgeMs: number;
  maxSinkStuckMs: number;
}

/** Dead-lettered records in a row (none delivered in between) after which a sink counts as rejecting everything. */
export const deadLetterStreakLimit = 3;

/** Config section `readiness`: how long a sink may deliver nothing while records wait before /readyz fails. */
export const readinessConfigSchema = z.strictObject({
  sinkStallMs: documented(z._default(z.number().check(z.int(), z.minimum(1000)), defaultMaxSinkStuckMs), {
    description: "`/readyz` fails when a sink delivered nothing for this long while records wait for it.",
  }),
});

/** Default limits: polls may be at most max(10 × poll interval, 30 s) old; a sink may be stuck for 10 min. */
export function defaultReadinessLimits(
  pollIntervalMs: number,
  sinkStallMs: number = defaultMaxSinkStuckMs,
): ReadinessLimits {
  return { maxPollAgeMs: Math.max(10 * pollIntervalMs, minMaxPollAgeMs), maxSinkStuckMs: sinkStallMs };
}

export interface ReadinessVerdict {
  ready: boolean;
  /** One line per failed check; empty when ready. */
  failed: string[];
}

/** Pure readiness judgement. */
export function evaluateReadiness(snapshot: ReadinessSnapshot, limits: ReadinessLimits): ReadinessVerdict {
  const failed: string[] = [];
  if (snapshot.lastGoodPollAgeMs === null) failed.push("poll: no successful poll yet");
  else if (snapshot.lastGoodPollAgeMs > limits.maxPollAgeMs) {
    failed.push(`poll: last successful poll ${snapshot.lastGoodPollAgeMs} ms ago (limit ${limits.maxPollAgeMs} ms)`);
  }
  if (!snapshot.storeWritable) failed.push("store: not writable");
  if (snapshot.imdsEndpoint?.error) failed.push(`imds endpoint: ${snapshot.imdsEndpoint.error}`);
  for (const sink of snapshot.sinks) {
    if (sink.needsOperator) failed.push(`sink ${sink.name}: failing: ${sink.needsOperator}`);
    if (sink.stuckForMs > limits.maxSinkStuckMs) {
      failed.push(
        `sink ${sink.name}: delivered nothing for ${Math.round(sink.stuckForMs)} ms while records wait (limit ${limits.maxSinkStuckMs} ms)`,
      );
    }
    if ((sink.deadLetteredSinceDelivery ?? 0) >= deadLetterStreakLimit) {
      failed.push(
        `sink ${sink.name}: dead-lettered the last ${sink.deadLetteredSinceDelivery} records it was given, none delivered since`,
      );
    }
  }
  return { ready: failed.length === 0, failed };
}

export interface ObservabilityServerOptions {
  host?: string;
  port?: number;
  /** Connection and request-time bounds (default: the `metrics` section's defaults). */
  bounds?: Partial<
    Pick<MetricsServerConfig, "maxConnections" | "headersTimeoutMs" | "requestTimeoutMs" | "keepAliveTimeoutMs">
  >;
  metrics: AgentMetrics;
  readiness: () => ReadinessSnapshot;
  limits: ReadinessLimits;
  logger: Logger;
}

export interface ObservabilityServer {
  /** e.g. `http://127.0.0.1:9464` */
  url: string;
  port: number;
  close(): Promise<void>;
}

/** Starts the server; resolves once it listens (rejects if the address is taken). */
export async function startObservabilityServer(options: ObservabilityServerOptions): Promise<ObservabilityServer> {
  const host = options.host ?? "127.0.0.1";
  const bounds = { ...metricsServerConfigSchema.parse({}), ...options.bounds };
  const requestTimeout = Math.max(bounds.requestTimeoutMs, bounds.headersTimeoutMs);
  const serverOptions = {
    headersTimeout: bounds.headersTimeoutMs,
    requestTimeout,
    keepAliveTimeout: bounds.keepAliveTimeoutMs,
    // How often Node checks the two timeouts above (its default, 30 s, would let a slow client hold on that long).
    connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(bounds.headersTimeoutMs / 4))),
  };
  const server = nodeHttp.createServer(serverOptions, (req, res) => {
    handle(req, res, options).catch((err: unknown) => {
      options.logger.warn({ err, path: req.url }, "observability request failed");
      if (!res.headersSent) send(res, 500, "text/plain; charset=utf-8", "internal error\n");
      else res.destroy();
    });
  });
  server.maxConnections = bounds.maxConnections;
  const port = await listen(server, options.port ?? defaultMetricsPort, host);
  const url = `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
  options.logger.info({ url }, "observability endpoints listening (/metrics, /healthz, /readyz)");
  return {
    url,
    port,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeIdleConnections();
      }),
  };
}

async function handle(req: IncomingMessage, res: ServerResponse, options: ObservabilityServerOptions): Promise<void> {
  const path = new URL(req.url ?? "/", "http://localhost").pathname;
  if (req.method !== "GET" && req.method !== "HEAD") {
    res.setHeader("Allow", "GET, HEAD");
    send(res, 405, "text/plain; charset=utf-8", "method not allowed\n");
    return;
  }
  switch (path) {
    case "/metrics": {
      const snapshot = options.readiness();
      // The age moves on its own between polls: refresh it at scrape time.
      options.metrics.lastGoodPollAge.set(snapshot.lastGoodPollAgeMs === null ? -1 : snapshot.lastGoodPollAgeMs / 1000);
      send(res, 200, options.metrics.contentType, await options.metrics.render());
      return;
    }
    case "/healthz":
      send(res, 200, "text/plain; charset=utf-8", "ok\n");
      return;
    case "/readyz": {
      const snapshot = options.readiness();
      const verdict = evaluateReadiness(snapshot, options.limits);
      const imdsEndpoint = snapshot.imdsEndpoint
        ? { url: snapshot.imdsEndpoint.url, source: snapshot.imdsEndpoint.source }
        : undefined;
      send(
        res,
        verdict.ready ? 200 : 503,
        "application/json",
        JSON.stringify({ ready: verdict.ready, failed: verdict.failed, imdsEndpoint }) + "\n",
      );
      return;
    }
    default:
      send(res, 404, "text/plain; charset=utf-8", "not found (try /metrics, /healthz, /readyz)\n");
  }
}

function send(res: ServerResponse, status: number, contentType: string, body: string): void {
  res.writeHead(status, {
    "Content-Type": contentType,
    "Content-Length": Buffer.byteLength(body),
    "Cache-Control": "no-store",
  });
  res.end(res.req.method === "HEAD" ? undefined : body);
}
