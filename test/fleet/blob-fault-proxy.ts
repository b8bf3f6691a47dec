// A local HTTP peer in front of Azurite that forwards every Blob request and answers chosen writes 503 ServerBusy
// instead: the fleet's checkpoints, ownership claims and fleet state as a failing Blob store, with every request counted
// at the peer (by kind and status, with the bytes each kind's writes carried) so a test can tell how many requests one
// retry made and how much one save wrote.
import { createServer, request, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** What a Blob request is about, read from its path: the checkpoint store's blobs, the fleet's state, anything else. */
export type BlobRequestKind = "ownership" | "checkpoint" | "state" | "other";

export interface BlobFaultProxy {
  /** Azurite's connection string with the proxy as the Blob endpoint. */
  readonly connectionString: string;
  /** Answers the next `count` writes (PUT) of `kind` with 503 ServerBusy, forwarding nothing. */
  failNextWrites(kind: BlobRequestKind, count: number): void;
  /** Writes of `kind` seen so far, by the status they were answered with. */
  writes(kind: BlobRequestKind): Record<string, number>;
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
  const faults = new Map<BlobRequestKind, number>();
  const counts = new Map<BlobRequestKind, Record<string, number>>();
  const bytes = new Map<BlobRequestKind, number>();
  const count = (kind: BlobRequestKind, status: number): void => {
    const byStatus = counts.get(kind) ?? {};
    byStatus[String(status)] = (byStatus[String(status)] ?? 0) + 1;
    counts.set(kind, byStatus);
  };
  const server: Server = createServer((req: IncomingMessage, res) => {
    const kind = kindOf(new URL(req.url ?? "/", "http://proxy").pathname);
    const isWrite = req.method === "PUT";
    if (isWrite && (faults.get(kind) ?? 0) > 0) {
      faults.set(kind, faults.get(kind)! - 1);
      count(kind, 503);
      req.resume();
      req.on("end", () => serverBusy(res));
      return;
    }
    const forwarded = request(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        if (isWrite) count(kind, answer.statusCode ?? 0);
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forwarded.on("error", () => res.destroy());
    if (isWrite) req.on("data", (chunk: Buffer) => void bytes.set(kind, (bytes.get(kind) ?? 0) + chunk.length));
    req.pipe(forwarded);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    connectionString: azuriteConnectionString.replace(
      /BlobEndpoint=http:\/\/[^/]+\//,
      `BlobEndpoint=http://127.0.0.1:${port}/`,
    ),
    failNextWrites: (kind, n) => void faults.set(kind, n),
    writes: (kind) => ({ ...(counts.get(kind) ?? {}) }),
    writtenBytes: (kind) => bytes.get(kind) ?? 0,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
