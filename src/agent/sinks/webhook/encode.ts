// Pure encoding for the webhook sink: split a batch into JSON-array bodies within the byte limit, and sign a body.
import { createHmac } from "node:crypto";
import type { OutboxEntry } from "../../delivery/outbox-entry.js";

/** A run of consecutive entries `[start, end)` sent as one body, or one entry too large to send at all. */
export type Chunk =
  | { readonly kind: "body"; readonly start: number; readonly end: number; readonly body: Buffer }
  | { readonly kind: "oversize"; readonly index: number; readonly bytes: number };

/** `[json,json,…]` as UTF-8 bytes. */
export function encodeBody(entries: readonly OutboxEntry[]): Buffer {
  return Buffer.from(`[${entries.map((e) => e.json).join(",")}]`, "utf8");
}

/**
 * Splits `batch` in order into bodies of at most `maxRecords` records and `maxBytes` bytes. A record whose own
 * body would exceed `maxBytes` becomes an `oversize` chunk (never sent).
 */
export function planChunks(batch: readonly OutboxEntry[], maxBytes: number, maxRecords: number): Chunk[] {
  const chunks: Chunk[] = [];
  let start = 0;
  let bytes = 2; // "[" and "]"
  const flush = (end: number): void => {
    if (end > start) chunks.push({ kind: "body", start, end, body: encodeBody(batch.slice(start, end)) });
  };
  for (let i = 0; i < batch.length; i++) {
    const size = Buffer.byteLength(batch[i]!.json, "utf8");
    if (size + 2 > maxBytes) {
      flush(i);
      chunks.push({ kind: "oversize", index: i, bytes: size + 2 });
      start = i + 1;
      bytes = 2;
      continue;
    }
    const added = size + (i > start ? 1 : 0);
    if (i > start && (bytes + added > maxBytes || i - start >= maxRecords)) {
      flush(i);
      start = i;
      bytes = 2 + size;
    } else {
      bytes += added;
    }
  }
  flush(batch.length);
  return chunks;
}

/**
 * `sha256=<hex>` HMAC-SHA256 of `<timestamp>.<exact body bytes>`: the timestamp (Unix seconds, sent in its own header)
 * is signed with the body, so a receiver that refuses old timestamps refuses a replayed request.
 */
export function signBody(body: Buffer, secret: string, timestampSeconds: number): string {
  return `sha256=${createHmac("sha256", secret).update(`${timestampSeconds}.`).update(body).digest("hex")}`;
}
