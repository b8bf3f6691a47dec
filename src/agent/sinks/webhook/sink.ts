// webhook sink: POSTs records as JSON arrays to an HTTP endpoint (optionally HMAC-signed) and turns each answer into
// per-record outcomes; the pure pieces are its neighbours (settings, body splitting and signing, answer classification).
import { request, type Agent, type Dispatcher } from "undici";
import type { Logger } from "pino";
import {
  delivered,
  rejected,
  retry,
  type FailedOutcome,
  type RecordOutcome,
  type SendOutcomes,
  type Sink,
} from "../sink.js";
import type { OutboxEntry } from "../../delivery/outbox-entry.js";
import { systemClock, type Clock } from "@sef/runtime/clock.js";
import { redactSecrets } from "../../observability/logger.js";
import { resolveHeaders, resolveSecret, type WebhookSettings } from "./settings.js";
import { planChunks, encodeBody, signBody } from "./encode.js";
import { createWebhookDispatcher, firstHeader, readCapped } from "./client.js";
import { classifyResponse, clipBody, maxRedirectHops, redirectTarget } from "./classify.js";
import { SinkConfigError } from "../errors.js";
import type { SinkRetrySettings } from "../delivery-settings.js";

export interface WebhookSinkOptions {
  url: string;
  /** Resolved header values (secrets: never logged). */
  headers: Record<string, string>;
  /** HMAC secret, signature and timestamp header names, when bodies are signed. */
  signature?: { secret: string; header: string; timestampHeader: string };
  timeoutMs: number;
  maxBatchRecords: number;
  maxBatchBytes: number;
  lingerMs: number;
  /** The sink's own retry policy (its section's `retry`). */
  retryPolicy?: SinkRetrySettings | undefined;
  agentVersion: string;
  logger: Logger;
  clock?: Clock;
  /** Default: a private undici Agent (no proxy); undici's `request` never follows redirects. */
  dispatcher?: Dispatcher;
}

/**
 * How sending one run of records ended: `delivered` when the endpoint settled every record of it (each one's outcome
 * is marked in the outcomes array), else the answer that stopped it (`retry`, or `rejected` for the whole run).
 */
type RangeResult = RecordOutcome;

export class WebhookSink implements Sink {
  readonly name = "webhook";
  readonly maxBatchRecords: number;
  readonly lingerMs: number;
  readonly retryPolicy: SinkRetrySettings | undefined;
  private readonly clock: Clock;
  private readonly ownAgent: Agent | undefined;
  private readonly dispatcher: Dispatcher;

  constructor(private readonly options: WebhookSinkOptions) {
    this.maxBatchRecords = options.maxBatchRecords;
    this.lingerMs = options.lingerMs;
    this.retryPolicy = options.retryPolicy;
    this.clock = options.clock ?? systemClock;
    this.ownAgent = options.dispatcher ? undefined : createWebhookDispatcher(options.timeoutMs);
    this.dispatcher = options.dispatcher ?? this.ownAgent!;
  }

  async send(batch: readonly OutboxEntry[], signal: AbortSignal): Promise<SendOutcomes> {
    const outcomes: (RecordOutcome | undefined)[] = batch.map(() => undefined);
    let failure: FailedOutcome | undefined;
    for (const chunk of planChunks(batch, this.options.maxBatchBytes, this.options.maxBatchRecords)) {
      if (chunk.kind === "oversize") {
        outcomes[chunk.index] = rejected(
          `record is ${chunk.bytes} bytes as a JSON array, over maxBatchBytes ${this.options.maxBatchBytes}`,
        );
        continue;
      }
      const result = await this.sendRange(batch, chunk.start, chunk.end, chunk.body, signal, outcomes);
      if (result.kind !== "delivered") {
        failure = result;
        break;
      }
    }
    if (!failure) {
      this.options.logger.debug({ sink: this.name, records: batch.length }, "webhook batch delivered");
      return outcomes.map((o) => o ?? delivered);
    }
    this.options.logger.warn({ sink: this.name, kind: failure.kind, reason: failure.reason }, "webhook send failed");
    // Records the endpoint settled keep their outcome; the rest are retried (or rejected, on a permanent answer).
    return outcomes.map((o) => o ?? failure);
  }

  /** Sends batch[start, end) as `body`; on 413 splits in halves, and rejects a record that is alone. */
  private async sendRange(
    batch: readonly OutboxEntry[],
    start: number,
    end: number,
    body: Buffer,
    signal: AbortSignal,
    outcomes: (RecordOutcome | undefined)[],
  ): Promise<RangeResult> {
    const answer = await this.post(body, signal);
    if (answer.kind === "delivered") {
      for (let i = start; i < end; i++) outcomes[i] = delivered;
      return answer;
    }
    if (answer.kind === "retry" || !answer.tooLarge) return answer;
    if (end - start === 1) {
      outcomes[start] = rejected(answer.reason);
      return delivered;
    }
    const mid = start + Math.ceil((end - start) / 2);
    const left = await this.sendRange(batch, start, mid, encodeBody(batch.slice(start, mid)), signal, outcomes);
    if (left.kind !== "delivered") return left;
    return this.sendRange(batch, mid, end, encodeBody(batch.slice(mid, end)), signal, outcomes);
  }

  private async post(body: Buffer, signal: AbortSignal): Promise<ReturnType<typeof classifyResponse>> {
    const { options } = this;
    const headers: Record<string, string> = {
      "content-type": "application/json",
      "user-agent": `sef/${options.agentVersion}`,
      ...options.headers,
    };
    if (options.signature) {
      const timestampSeconds = Math.floor(this.clock.now() / 1000);
      headers[options.signature.timestampHeader] = String(timestampSeconds);
      headers[options.signature.header] = signBody(body, options.signature.secret, timestampSeconds);
    }
    try {
      let url = options.url;
      for (let hop = 0; ; hop++) {
        const response = await request(url, {
          method: "POST",
          dispatcher: this.dispatcher,
          headers,
          body,
          headersTimeout: options.timeoutMs,
          bodyTimeout: options.timeoutMs,
          signal: AbortSignal.any([signal, AbortSignal.timeout(options.timeoutMs)]),
        });
        const text = await readCapped(response.body);
        const location = firstHeader(response.headers["location"]);
        const next = hop < maxRedirectHops ? redirectTarget(response.statusCode, location, url) : undefined;
        if (next) {
          this.options.logger.debug(
            { sink: this.name, status: response.statusCode, to: next.origin + next.pathname },
            "webhook redirect followed",
          );
          url = next.toString();
          continue;
        }
        if (response.statusCode >= 300 && response.statusCode < 400) {
          const to = location ? safeLocation(location, url) : "(no Location)";
          this.options.logger.warn(
            { sink: this.name, status: response.statusCode, location: to, hops: hop },
            "webhook answered a redirect that is not followed (only 307/308 within the same origin, at most 3 hops); will retry",
          );
        }
        return classifyResponse(
          response.statusCode,
          firstHeader(response.headers["retry-after"]),
          text,
          this.clock.now(),
        );
      }
    } catch (err) {
      return retry(`request to the webhook failed: ${errorText(err)}`);
    }
  }

  async close(): Promise<void> {
    await this.ownAgent?.close();
  }
}

/** A redirect target for logs: origin and path only (a query may carry a token). */
function safeLocation(location: string, base: string): string {
  try {
    const url = new URL(location, base);
    return url.origin + url.pathname;
  } catch {
    return "(unreadable Location)";
  }
}

function errorText(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return clipBody(redactSecrets(`${err.name}${typeof code === "string" ? ` (${code})` : ""}: ${err.message}`));
  }
  return clipBody(String(err));
}

export interface CreateWebhookSinkInput {
  /** `--sink webhook:URL` argument; overrides `settings.url`. */
  argument: string | undefined;
  settings: WebhookSettings;
  logger: Logger;
  agentVersion: string;
  /** Environment for `fromEnv` headers and the signing secret (default: process.env). */
  env?: NodeJS.ProcessEnv;
  clock?: Clock;
}

/**
 * Builds the sink from validated settings (the configuration's rules checked the URL's shape); throws (naming variables,
 * never values) when the URL or an env variable is missing.
 */
export function createWebhookSink(input: CreateWebhookSinkInput): WebhookSink {
  const { settings } = input;
  const env = input.env ?? process.env;
  const url = input.argument || settings.url;
  if (!url) throw new SinkConfigError("webhook sink needs a URL: --sink webhook:URL or webhook.url in the config file");
  return new WebhookSink({
    url,
    headers: resolveHeaders(settings.headers, env),
    ...(settings.signature
      ? {
          signature: {
            secret: resolveSecret(settings.signature.secretEnv, env),
            header: settings.signature.header,
            timestampHeader: settings.signature.timestampHeader,
          },
        }
      : {}),
    timeoutMs: settings.timeoutMs,
    maxBatchRecords: settings.maxBatchRecords,
    maxBatchBytes: settings.maxBatchBytes,
    lingerMs: settings.lingerMs,
    retryPolicy: settings.retry,
    agentVersion: input.agentVersion,
    logger: input.logger,
    ...(input.clock ? { clock: input.clock } : {}),
  });
}
