// HTTP helpers of the simulator: JSON and raw answers, documents with their ETag (304 to a matching If-None-Match),
// bounded request bodies read as validated JSON, and the error a route throws to answer with a status.
import { createHash } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { z } from "zod";

export const maxRequestBodyBytes = 64 * 1024;

export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: Record<string, unknown>,
  ) {
    super(String(body.error ?? status));
  }
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "Content-Type": "application/json; charset=utf-8",
    "Content-Length": Buffer.byteLength(text),
    ...headers,
  });
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
export function sendDocument(req: IncomingMessage, res: ServerResponse, document: unknown): string {
  const text = JSON.stringify(document);
  const etag = etagOf(text);
  if (ifNoneMatchMatches(req.headers["if-none-match"], etag)) {
    res.writeHead(304, { ETag: etag });
    res.end();
    return "304";
  }
  res.writeHead(200, {
    "Content-Type": "application/json; charset=utf-8",
    "Content-Length": Buffer.byteLength(text),
    ETag: etag,
  });
  res.end(text);
  return "200";
}

export function sendText(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, {
    "Content-Type": "application/json; charset=utf-8",
    "Content-Length": Buffer.byteLength(text),
  });
  res.end(text);
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > maxRequestBodyBytes)
      throw new HttpError(400, { error: `Bad request. Body larger than ${maxRequestBodyBytes} bytes.` });
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}

export async function readJsonBody<T>(req: IncomingMessage, schema: z.ZodType<T>, what: string): Promise<T> {
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
