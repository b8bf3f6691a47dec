// Builds the webhook sink's HTTP client: a private undici Agent (no proxy, the connect timeout of the settings; undici's
// `request` never retries nor follows redirects, so the drainer is the only retry loop), and reads its answers capped.
import { Agent, type Dispatcher } from "undici";

const maxResponseBytes = 64 * 1024;

export function createWebhookDispatcher(timeoutMs: number): Agent {
  return new Agent({ connect: { timeout: timeoutMs } });
}

/** The first value of a response header. */
export function firstHeader(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** The answer's body as text, up to 64 KiB (the rest is read and dropped, so the connection can be reused). */
export async function readCapped(body: Dispatcher.ResponseData["body"]): Promise<string> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array);
    if (size < maxResponseBytes) parts.push(buf.subarray(0, maxResponseBytes - size));
    size += buf.length;
  }
  return Buffer.concat(parts).toString("utf8");
}
