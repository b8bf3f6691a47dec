// The peer's HTTP edges: reading a request body within the API server's size limit, parsing it (JSON, or the
// protobuf DeleteOptions of a DELETE), and writing an answer with the headers the API server sets.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { ApiResponse } from "./api.js";
import { decodeDeleteOptions, protobufMediaType } from "./protobuf.js";
import { badRequest, failure, StatusError, unsupportedMediaType, type Status } from "./status.js";

/** The API server's own limit on a request body (3 MiB). */
export const maxRequestBodyBytes = 3 * 1024 * 1024;

export async function readBody(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxRequestBodyBytes)
      throw new StatusError(failure(413, "RequestEntityTooLarge", "the request body is too large"));
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** JSON bodies, and the protobuf DeleteOptions of a DELETE; other media types are a 415. */
export function parseBody(body: Buffer, method: string, contentType: string | undefined): unknown {
  if (body.length === 0) return undefined;
  const media = (contentType ?? "application/json").split(";")[0]?.trim().toLowerCase() ?? "";
  if (media === protobufMediaType && method === "DELETE") return decodeDeleteOptions(body);
  if (method === "PATCH" ? !media.endsWith("+json") : media !== "application/json")
    throw unsupportedMediaType(method === "PATCH");
  try {
    return JSON.parse(body.toString("utf8"));
  } catch (_error) {
    throw badRequest("the request body is not valid JSON");
  }
}

/** The headers of an answer: `base` (APF's), the answer's own, and Retry-After for a Status that asks for a wait. */
export function responseHeaders(
  result: ApiResponse,
  base: Readonly<Record<string, string>>,
): Record<string, string | string[]> {
  const isText = typeof result.body === "string";
  const retryAfterSeconds = isText
    ? undefined
    : (result.body as Partial<Status> | undefined)?.details?.retryAfterSeconds;
  return {
    ...base,
    "Content-Type": isText ? "text/plain; charset=utf-8" : "application/json",
    "Cache-Control": "no-cache, private",
    ...(retryAfterSeconds !== undefined && retryAfterSeconds > 0 ? { "Retry-After": String(retryAfterSeconds) } : {}),
    ...(result.headers as Record<string, string | string[]> | undefined),
  };
}

export function send(response: ServerResponse, result: ApiResponse, base: Readonly<Record<string, string>>): void {
  const body = typeof result.body === "string" ? result.body : JSON.stringify(result.body);
  response.writeHead(result.code, responseHeaders(result, base));
  response.end(body);
}
