// A plain HTTPS client for the Kubernetes peer's tests: one request with the peer's CA and (by default) its bearer
// token, a deadline, and the answer's code, headers and body (JSON when it is JSON, else the text).
import type { IncomingHttpHeaders } from "node:http";
import { request } from "node:https";
import type { KubernetesPeer } from "../../src/testbed/peers/kubernetes/index.js";

export interface PeerAnswer {
  readonly code: number;
  readonly headers: IncomingHttpHeaders;
  readonly text: string;
  /** The JSON body, or `{ text }` when the body is not a JSON object. */
  readonly body: Record<string, unknown>;
}

export interface PeerRequestOptions {
  readonly body?: unknown;
  readonly contentType?: string;
  /** The bearer token (default the peer's; null sends none). */
  readonly token?: string | null;
  readonly accept?: string;
  readonly deadlineMs?: number;
}

function jsonObjectOr(text: string): Record<string, unknown> {
  try {
    const parsed = JSON.parse(text) as unknown;
    if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed))
      return parsed as Record<string, unknown>;
  } catch (_notJson) {
    // a watch stream or plain text
  }
  return { text };
}

export function requestPeer(
  p: Pick<KubernetesPeer, "url" | "caPem" | "token">,
  method: string,
  path: string,
  options: PeerRequestOptions = {},
): Promise<PeerAnswer> {
  const token = options.token === undefined ? p.token : options.token;
  const payload =
    options.body === undefined
      ? undefined
      : Buffer.from(typeof options.body === "string" ? options.body : JSON.stringify(options.body));
  const headers: Record<string, string> = {
    "content-type": options.contentType ?? "application/json",
    ...(payload ? { "content-length": String(payload.length) } : {}),
    ...(token !== null ? { authorization: `Bearer ${token}` } : {}),
    ...(options.accept ? { accept: options.accept } : {}),
  };
  return new Promise((resolve, reject) => {
    const req = request(
      `${p.url}${path}`,
      { method, ca: p.caPem, timeout: options.deadlineMs ?? 10_000, headers },
      (res) => {
        let text = "";
        res.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
        res.on("end", () =>
          resolve({ code: res.statusCode ?? 0, headers: res.headers, text, body: jsonObjectOr(text) }),
        );
      },
    );
    req.on("timeout", () => req.destroy(new Error(`${method} ${path} timed out`)));
    req.on("error", reject);
    req.end(payload);
  });
}
