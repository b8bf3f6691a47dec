// A local HTTP peer in front of Azurite that forwards every Blob request and answers chosen writes 503 ServerBusy
// instead, or holds them until released: the fleet's checkpoints, ownership claims and fleet state as a failing or slow
// Blob store, with every write counted at the peer (by kind, blob and status, with the bytes each carried) so a test can
// tell how many requests one retry made and how much one save wrote.
import { createServer, request, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** What a Blob request is about, read from its path: the checkpoint store's blobs, the fleet's state, anything else. */
export type BlobRequestKind = "ownership" | "checkpoint" | "state" | "other";

/** Which blobs of a kind a fault or a count is about (default: every blob of the kind). */
export type BlobNameMatch = (blobPath: string) => boolean;

/** A fleet state snapshot (`<partition>.json`), not one of its journals. */
export const snapshotBlob: BlobNameMatch = (path) => path.endsWith(".json");

export interface BlobFaultProxy {
  /** Azurite's connection string with the proxy as the Blob endpoint. */
  readonly connectionString: string;
  /** Answers the next `count` writes (PUT) of `kind` (of the blobs `blobs` matches) with 503 ServerBusy, forwarding nothing. */
  failNextWrites(kind: BlobRequestKind, count: number, blobs?: BlobNameMatch): void;
  /**
   * Holds the writes of `kind` to the blobs `blobs` matches, unanswered, from now until `release` forwards them: a slow
   * Blob store for those blobs alone.
   */
  holdWrites(kind: BlobRequestKind, blobs: BlobNameMatch): { held(): number; release(): void };
  /**
   * Forwards the next `count` writes of `kind` (to the blobs `blobs` matches, whose body holds `bodyHolds`) and answers
   * 503 ServerBusy whatever the store answered: a write that took effect while its client was told it failed (what a
   * timeout after the fact looks like).
   */
  failAfterWriting(kind: BlobRequestKind, count: number, blobs: BlobNameMatch, bodyHolds?: string): void;
  /** Writes of `kind` (to the blobs `blobs` matches) seen so far, by the status they were answered with. */
  writes(kind: BlobRequestKind, blobs?: BlobNameMatch): Record<string, number>;
  /** Body bytes of the writes (PUT) of `kind` forwarded so far. */
  writtenBytes(kind: BlobRequestKind): number;
  close(): Promise<void>;
}

function kindOf(path: string): BlobRequestKind {
  if (path.includes("/ownership/")) return "ownership";
  if (path.includes("/checkpoint/")) return "checkpoint";
  if (path.includes("/fleet-state/")) return "state";
  return "other";
}

/** The answer Blob Storage gives when it is too busy (the SDK classifies it as retriable). */
function serverBusy(res: import("node:http").ServerResponse): void {
  const body =
    '<?xml version="1.0" encoding="utf-8"?><Error><Code>ServerBusy</Code><Message>test fault: the server is busy</Message></Error>';
  res
    .writeHead(503, {
      "content-type": "application/xml",
      "x-ms-error-code": "ServerBusy",
      "content-length": Buffer.byteLength(body),
    })
    .end(body);
}

export async function startBlobFaultProxy(azuriteConnectionString: string): Promise<BlobFaultProxy> {
  const upstream = new URL(/BlobEndpoint=([^;]+)/.exec(azuriteConnectionString)![1]!);
  /** Writes answered 503: instead of forwarding them, or after (`afterWriting`: the write took effect). */
  const faults: Array<{
    kind: BlobRequestKind;
    left: number;
    blobs: BlobNameMatch;
    afterWriting: boolean;
    bodyHolds?: string;
  }> = [];
  const holds: Array<{ kind: BlobRequestKind; blobs: BlobNameMatch; waiting: Array<() => void>; released: boolean }> =
    [];
  const written: Array<{ kind: BlobRequestKind; path: string; status: number }> = [];
  const bytes = new Map<BlobRequestKind, number>();
  /** Whether a fault applies to this write (it is then used up once). */
  const takeFault = (kind: BlobRequestKind, path: string, afterWriting: boolean, body = ""): boolean => {
    const fault = faults.find(
      (f) =>
        f.afterWriting === afterWriting &&
        f.kind === kind &&
        f.left > 0 &&
        f.blobs(path) &&
        (f.bodyHolds === undefined || body.includes(f.bodyHolds)),
    );
    if (fault === undefined) return false;
    fault.left--;
    written.push({ kind, path, status: 503 });
    return true;
  };
  const forward = (
    req: IncomingMessage,
    res: import("node:http").ServerResponse,
    kind: BlobRequestKind,
    path: string,
  ) => {
    const isWrite = req.method === "PUT";
    const chunks: Buffer[] = [];
    const forwarded = request(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        if (isWrite && takeFault(kind, path, true, Buffer.concat(chunks).toString())) {
          answer.resume();
          serverBusy(res);
          return;
        }
        if (isWrite) written.push({ kind, path, status: answer.statusCode ?? 0 });
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forwarded.on("error", () => res.destroy());
    if (isWrite)
      req.on("data", (chunk: Buffer) => {
        chunks.push(chunk);
        bytes.set(kind, (bytes.get(kind) ?? 0) + chunk.length);
      });
    req.pipe(forwarded);
  };
  const server: Server = createServer((req: IncomingMessage, res) => {
    const path = new URL(req.url ?? "/", "http://proxy").pathname;
    const kind = kindOf(path);
    const isWrite = req.method === "PUT";
    if (isWrite && takeFault(kind, path, false)) {
      req.resume();
      req.on("end", () => serverBusy(res));
      return;
    }
    const hold = isWrite ? holds.find((h) => !h.released && h.kind === kind && h.blobs(path)) : undefined;
    if (hold !== undefined) {
      req.pause();
      hold.waiting.push(() => forward(req, res, kind, path));
      return;
    }
    forward(req, res, kind, path);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    connectionString: azuriteConnectionString.replace(
      /BlobEndpoint=http:\/\/[^/]+\//,
      `BlobEndpoint=http://127.0.0.1:${port}/`,
    ),
    failNextWrites: (kind, left, blobs = () => true) => void faults.unshift({ kind, left, blobs, afterWriting: false }),
    failAfterWriting: (kind, left, blobs, bodyHolds) =>
      void faults.push({ kind, left, blobs, afterWriting: true, bodyHolds }),
    holdWrites: (kind, blobs) => {
      const hold = { kind, blobs, waiting: [] as Array<() => void>, released: false };
      holds.push(hold);
      return {
        held: () => hold.waiting.length,
        release: () => {
          hold.released = true;
          for (const go of hold.waiting.splice(0)) go();
        },
      };
    },
    writes: (kind, blobs = () => true) => {
      const byStatus: Record<string, number> = {};
      for (const w of written)
        if (w.kind === kind && blobs(w.path)) byStatus[String(w.status)] = (byStatus[String(w.status)] ?? 0) + 1;
      return byStatus;
    },
    writtenBytes: (kind) => bytes.get(kind) ?? 0,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
