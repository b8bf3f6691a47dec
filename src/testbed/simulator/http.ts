// HTTP helpers of the simulator: JSON and raw answers, bounded request bodies read as validated JSON, and the error
// a route throws to answer with a status.
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

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "Content-Type": "application/json; charset=utf-8", "Content-Length": Buffer.byteLength(text), ...headers });
  res.end(text);
}

export function sendText(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { "Content-Type": "application/json; charset=utf-8", "Content-Length": Buffer.byteLength(text) });
  res.end(text);
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > maxRequestBodyBytes) throw new HttpError(400, { error: `Bad request. Body larger than ${maxRequestBodyBytes} bytes.` });
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
