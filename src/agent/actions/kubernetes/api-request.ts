// One Kubernetes API request (I/O): JSON over the endpoint's kept-alive connection, under one deadline that covers the
// credentials, the connection and the whole answer; a 401 drops cached credentials and is tried once more (as client-go
// re-runs an exec plugin on 401), so a rotated token file or an expired plugin credential is picked up at once.
import type * as Http from "node:http";
import type * as Https from "node:https";
import { SefError } from "@sef/errors/sef-error.js";
import type { KubeEndpoint } from "./credentials.js";

/** Largest answer read (a list of a node's pods is well under it). */
const maxAnswerBytes = 32 * 1024 * 1024;

/** An API answer other than the expected 2xx (status 0: no answer: network failure, deadline, credentials). */
export class KubeApiError extends SefError {
  override readonly name = "KubeApiError";
  override readonly code = "SEF_ERR_KUBE_API";
  constructor(
    readonly status: number,
    message: string,
    /** The Status's `reason` (NotFound, Conflict, Forbidden, TooManyRequests, …), when the server sent one. */
    readonly reason?: string,
  ) {
    super(message);
  }
}

export interface ApiCall {
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  /** Path and query, e.g. `/api/v1/nodes/n1`. */
  path: string;
  body?: unknown;
  contentType?: string;
}

export interface ApiAnswer {
  status: number;
  /** The parsed JSON body (a Status for most errors), or undefined. */
  body: unknown;
  header(name: string): string | undefined;
}

/** The Kubernetes `Status` fields sef reads from an error answer. */
export interface StatusBody {
  message?: string;
  reason?: string;
  details?: { causes?: Array<{ reason?: string; type?: string; message?: string }>; retryAfterSeconds?: number };
}

export class ApiTransport {
  constructor(
    private readonly endpoint: KubeEndpoint,
    private readonly timeoutMs: number,
    private readonly userAgent: string,
  ) {}

  get server(): string {
    return this.endpoint.server;
  }

  /** Sends the call; any HTTP answer resolves (the caller reads the status); no answer in time rejects with status 0. */
  async send(call: ApiCall): Promise<ApiAnswer> {
    const deadline = AbortSignal.timeout(this.timeoutMs);
    try {
      const first = await this.once(call, deadline);
      if (first.status !== 401) return first;
      this.endpoint.forget();
      return await this.once(call, deadline);
    } catch (err) {
      if (err instanceof KubeApiError) throw err;
      const why = deadline.aborted ? `no answer within ${this.timeoutMs} ms` : (err as Error).message || String(err);
      throw new KubeApiError(0, `no answer from the Kubernetes API at ${this.endpoint.server}: ${why}`);
    }
  }

  /** Sends the call and expects a 2xx: its body, else a KubeApiError with the status and the Status's message. */
  async json<T>(call: ApiCall): Promise<T> {
    const answer = await this.send(call);
    if (answer.status >= 200 && answer.status < 300) return answer.body as T;
    throw errorOf(answer, `${call.method} ${call.path.split("?")[0]}`);
  }

  close(): void {
    this.endpoint.close();
  }

  private async once(call: ApiCall, deadline: AbortSignal): Promise<ApiAnswer> {
    const prepared = await raceAbort(this.endpoint.prepare(), deadline).catch((err: unknown) => {
      if (deadline.aborted) throw err;
      throw new KubeApiError(
        0,
        `could not get credentials (${this.endpoint.source}): ${(err as Error).message || String(err)}`,
      );
    });
    const payload = call.body === undefined ? undefined : Buffer.from(JSON.stringify(call.body));
    const headers: Record<string, string> = {
      ...prepared.headers,
      Accept: "application/json",
      "User-Agent": this.userAgent,
      ...(payload
        ? { "Content-Type": call.contentType ?? "application/json", "Content-Length": String(payload.length) }
        : {}),
    };
    const module = (
      this.endpoint.server.startsWith("https:")
        ? process.getBuiltinModule("node:https")
        : process.getBuiltinModule("node:http")
    ) as typeof Https;
    return new Promise<ApiAnswer>((resolve, reject) => {
      const request = module.request(
        `${this.endpoint.server}${call.path}`,
        { method: call.method, agent: prepared.agent as Https.Agent, headers, signal: deadline },
        (response) => {
          readAnswer(response).then(resolve, reject);
        },
      );
      request.on("error", reject);
      request.end(payload);
    });
  }
}

async function readAnswer(response: Http.IncomingMessage): Promise<ApiAnswer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxAnswerBytes) {
      response.destroy();
      throw new KubeApiError(response.statusCode ?? 0, `the Kubernetes API answered more than ${maxAnswerBytes} bytes`);
    }
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString("utf8");
  let body: unknown;
  try {
    body = text === "" ? undefined : JSON.parse(text);
  } catch {
    body = { message: text.slice(0, 300) } satisfies StatusBody;
  }
  const header = (name: string): string | undefined => {
    const value = response.headers[name.toLowerCase()];
    return Array.isArray(value) ? value[0] : value;
  };
  return { status: response.statusCode ?? 0, body, header };
}

/** The answer as a KubeApiError: `HTTP 403 on GET /api/v1/nodes/n1: <the Status's message>`. */
export function errorOf(answer: ApiAnswer, what: string): KubeApiError {
  const status = (answer.body ?? {}) as StatusBody;
  return new KubeApiError(
    answer.status,
    `HTTP ${answer.status} on ${what}: ${status.message ?? "no message"}`,
    status.reason,
  );
}

function raceAbort<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason as Error);
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}
