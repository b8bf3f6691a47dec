// The plain-http poller (one kept-alive net.Socket, http-parser-js) against raw TCP servers that answer in any
// segmentation, close between polls or mid-body, send garbage, too much, or nothing; and through ImdsClient, the same
// outcome as the node:http path for a corpus of answers.
import { afterEach, describe, expect, it } from "vitest";
import fc from "fast-check";
import { spawn } from "node:child_process";
import { createServer, type Server, type Socket } from "node:net";
import type { AddressInfo } from "node:net";
import { PlainHttpPoller, type RequestOutcome } from "../../src/agent/imds/plain-http-poller.js";
import { ResponseReader } from "../../src/agent/imds/response-reader.js";
import { ImdsClient } from "../../src/agent/imds/client.js";
import { ImdsRequestError } from "../../src/agent/imds/errors.js";
import { plainGetBytes } from "../../src/agent/imds/plain-request.js";
import { waitFor } from "../helpers/wait.js";
import { systemClock } from "../../src/runtime/clock.js";
import { propertyParams } from "../helpers/seed.js";

const body = JSON.stringify({
  DocumentIncarnation: 7,
  Events: [
    {
      EventId: "e1",
      EventType: "Freeze",
      ResourceType: "VirtualMachine",
      Resources: ["vm"],
      EventStatus: "Scheduled",
      NotBefore: "",
      Description: "",
      EventSource: "Platform",
      DurationInSeconds: -1,
    },
  ],
});
const contentLengthAnswer = `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nETag: "abc"\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
const chunkedAnswer = (parts: readonly string[]): string =>
  `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nETag: "abc"\r\n\r\n${parts.map((p) => `${Buffer.byteLength(p).toString(16)}\r\n${p}\r\n`).join("")}0\r\n\r\n`;

interface RawServer {
  readonly port: number;
  readonly url: string;
  /** Connections accepted so far. */
  connections: number;
  /** Requests read so far (each GET's head). */
  readonly requests: string[];
}

type OnRequest = (socket: Socket, request: string, index: number) => void | Promise<void>;
const servers: Server[] = [];
const sockets = new Set<Socket>();
const pollers: PlainHttpPoller[] = [];
const clients: ImdsClient[] = [];

/** A TCP server that reads GET heads and lets `onRequest` write whatever bytes it likes. */
async function rawServer(onRequest: OnRequest): Promise<RawServer> {
  const state = { connections: 0, requests: [] as string[] };
  const server = createServer((socket) => {
    state.connections += 1;
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => {});
    let pending = "";
    socket.on("data", (bytes) => {
      pending += bytes.toString("latin1");
      for (let end = pending.indexOf("\r\n\r\n"); end >= 0; end = pending.indexOf("\r\n\r\n")) {
        const request = pending.slice(0, end + 4);
        pending = pending.slice(end + 4);
        state.requests.push(request);
        void onRequest(socket, request, state.requests.length - 1);
      }
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return Object.assign(state, { port, url: `http://127.0.0.1:${port}` });
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Writes `bytes` cut at `cuts` (sorted offsets), each piece flushed and given time to arrive on its own. */
async function writeInPieces(socket: Socket, bytes: Buffer, cuts: readonly number[]): Promise<void> {
  let from = 0;
  for (const cut of [...cuts, bytes.length]) {
    if (cut <= from) continue;
    await new Promise<void>((resolve) => socket.write(bytes.subarray(from, cut), () => resolve()));
    from = cut;
    await sleep(2);
  }
}

function poller(port: number, over: Partial<ConstructorParameters<typeof PlainHttpPoller>[0]> = {}): PlainHttpPoller {
  const p = new PlainHttpPoller({
    host: "127.0.0.1",
    port,
    connectTimeoutMs: 2000,
    maxBodyBytes: 64 * 1024,
    idleSocketMs: 30_000,
    ...over,
  });
  pollers.push(p);
  return p;
}

const request = (port: number, etag?: string): Buffer =>
  plainGetBytes("127.0.0.1", port, "/metadata/scheduledevents?api-version=2020-07-01", {
    Metadata: "true",
    ...(etag ? { "If-None-Match": etag } : {}),
  })!;

function client(url: string, over: Partial<ConstructorParameters<typeof ImdsClient>[0]> = {}): ImdsClient {
  const c = new ImdsClient({
    imdsUrl: url,
    apiVersion: "2020-07-01",
    clock: systemClock,
    firstCallTimeoutMs: 2000,
    requestTimeoutMs: 2000,
    ...over,
  });
  clients.push(c);
  return c;
}

const answered = (outcome: RequestOutcome): { status: number; text: string; etag: unknown } => {
  if (!outcome.ok) throw new Error(`expected an answer, got ${outcome.error.code}: ${outcome.error.message}`);
  return { status: outcome.answer.status, text: outcome.answer.text, etag: outcome.answer.headers.etag };
};

afterEach(async () => {
  for (const p of pollers.splice(0)) p.close();
  await Promise.all(clients.splice(0).map((c) => c.close()));
  for (const s of sockets) s.destroy();
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

describe("ResponseReader", () => {
  it("reads the same answer whatever the segmentation (Content-Length and chunked)", () => {
    const answers = [contentLengthAnswer, chunkedAnswer([body.slice(0, 17), body.slice(17)])].map((a) =>
      Buffer.from(a, "latin1"),
    );
    fc.assert(
      fc.property(fc.constantFrom(...answers), fc.array(fc.nat(), { maxLength: 8 }), (bytes, rawCuts) => {
        const cuts = [...new Set(rawCuts.map((c) => c % bytes.length))].sort((a, b) => a - b);
        const reader = new ResponseReader(64 * 1024);
        reader.start();
        let from = 0;
        let progress = reader.push(Buffer.alloc(0));
        for (const cut of [...cuts, bytes.length]) {
          if (cut <= from) continue;
          expect(progress.state).toBe("partial");
          progress = reader.push(Buffer.from(bytes.subarray(from, cut)));
          from = cut;
        }
        expect(progress).toMatchObject({
          state: "complete",
          reusable: true,
          answer: { status: 200, text: body, headers: { etag: '"abc"' } },
        });
      }),
      propertyParams(2601, 300),
    );
  });

  it("reads answer after answer of any size and script with one reader, from bytes the caller reuses after each push", () => {
    const piece = fc.string({ unit: fc.constantFrom("a", "{", "é", "€", "𝄞", "\n"), maxLength: 16 });
    const text = fc.tuple(piece, fc.integer({ min: 0, max: 1500 })).map(([p, times]) => p.repeat(times)); // up to ~96 KB
    fc.assert(
      fc.property(
        fc.array(fc.tuple(text, fc.boolean(), fc.integer({ min: 1, max: 5000 })), { minLength: 1, maxLength: 6 }),
        (answers) => {
          const reader = new ResponseReader(256 * 1024);
          const scratch = Buffer.alloc(5000);
          for (const [bodyText, chunked, segment] of answers) {
            const head = chunked
              ? chunkedAnswer([bodyText])
              : `HTTP/1.1 200 OK\r\nContent-Length: ${Buffer.byteLength(bodyText)}\r\n\r\n${bodyText}`;
            const bytes = Buffer.from(head, "utf8");
            reader.start();
            let progress = reader.push(Buffer.alloc(0));
            for (let from = 0; from < bytes.length; from += segment) {
              const length = bytes.copy(scratch, 0, from, from + segment);
              progress = reader.push(scratch.subarray(0, length));
              scratch.fill(0x7a); // the caller's bytes are its own again
            }
            expect(progress).toMatchObject({ state: "complete", answer: { status: 200, text: bodyText } });
          }
        },
      ),
      propertyParams(2602, 150),
    );
  });
});

describe("PlainHttpPoller", () => {
  it("reads answers split at any byte boundary over one kept-alive connection", async () => {
    let cuts: number[] = [];
    let answer = Buffer.alloc(0);
    const server = await rawServer((socket) => writeInPieces(socket, answer, cuts));
    const p = poller(server.port);
    const variants = [
      contentLengthAnswer,
      chunkedAnswer([body]),
      chunkedAnswer([body.slice(0, 1), body.slice(1, 40), body.slice(40)]),
    ].map((a) => Buffer.from(a, "latin1"));
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...variants), fc.array(fc.nat(), { maxLength: 5 }), async (bytes, rawCuts) => {
        answer = bytes;
        cuts = [...new Set(rawCuts.map((c) => c % bytes.length))].sort((a, b) => a - b);
        expect(answered(await p.get(request(server.port), 2000))).toEqual({ status: 200, text: body, etag: '"abc"' });
      }),
      propertyParams(2602, 40),
    );
    expect(server.connections).toBe(1);
  });

  it("opens a new connection when the server closed the last one between polls, or answered Connection: close", async () => {
    const server = await rawServer((socket, _request, index) => {
      if (index === 1) {
        // says close but leaves the connection open: the client must not send on it again
        socket.write(`HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
        return;
      }
      socket.write(contentLengthAnswer);
      if (index === 0) setTimeout(() => socket.end(), 20); // the server's idle close, between polls
    });
    const p = poller(server.port);
    expect(answered(await p.get(request(server.port), 2000)).status).toBe(200);
    await sleep(200);
    expect(answered(await p.get(request(server.port), 2000)).status).toBe(200);
    expect(server.connections).toBe(2);
    expect(answered(await p.get(request(server.port), 2000)).status).toBe(200);
    expect(server.connections).toBe(3);
  });

  it("replaces a reused connection the server closes on the request once, and never in a loop", async () => {
    let closeWithoutAnswer = new Set<number>([1]);
    const server = await rawServer((socket, _request, index) => {
      if (closeWithoutAnswer.has(index)) socket.destroy();
      else socket.write(contentLengthAnswer);
    });
    const p = poller(server.port);
    expect(answered(await p.get(request(server.port), 2000)).status).toBe(200);
    expect(answered(await p.get(request(server.port), 2000)).status).toBe(200); // request 1 closed, request 2 answers
    expect([server.requests.length, server.connections]).toEqual([3, 2]);
    closeWithoutAnswer = new Set([3, 4, 5, 6]);
    const failed = await p.get(request(server.port), 2000);
    expect(failed).toMatchObject({ ok: false, error: { code: "ECONNRESET" } });
    expect([server.requests.length, server.connections]).toEqual([5, 3]); // one replacement, then the failure
  });

  it("fails an answer cut off mid-body, or a first connection closed before answering, as a reset", async () => {
    const server = await rawServer((socket, _request, index) => {
      if (index === 0) socket.destroy();
      else socket.end(contentLengthAnswer.slice(0, -10));
    });
    const p = poller(server.port);
    expect(await p.get(request(server.port), 2000)).toMatchObject({
      ok: false,
      error: { code: "ECONNRESET", message: "socket hang up" },
    });
    expect(await p.get(request(server.port), 2000)).toMatchObject({
      ok: false,
      error: { code: "ECONNRESET", message: "the answer was cut off" },
    });
  });

  it("takes a body delimited by the server's close", async () => {
    const server = await rawServer((socket) => void socket.end(`HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n${body}`));
    const p = poller(server.port);
    expect(answered(await p.get(request(server.port), 2000))).toMatchObject({ status: 200, text: body });
  });

  it("ends a request the server never answers at its deadline, and one trickling its body too", async () => {
    // The trickle: a byte every 50 ms, 40 in all (2 s), then silence. A deadline restarted by each byte would end the
    // request only after the trickle; the server counts the bytes it had sent when the client closed.
    const trickleBytes = 40;
    let sentWhenClosed: number | undefined;
    const server = await rawServer((socket, _request, index) => {
      if (index === 0) return;
      socket.write(contentLengthAnswer.slice(0, contentLengthAnswer.indexOf("\r\n\r\n") + 4));
      let sent = 0;
      socket.on("close", () => (sentWhenClosed = sent));
      const timer = setInterval(() => {
        if (socket.destroyed || sent === trickleBytes) return clearInterval(timer);
        socket.write(" ");
        sent += 1;
      }, 50);
    });
    const p = poller(server.port);
    const started = performance.now();
    expect(await p.get(request(server.port), 300)).toMatchObject({
      ok: false,
      error: { code: "SEF_DEADLINE", headersReceived: false },
    });
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
    expect(await p.get(request(server.port), 300)).toMatchObject({
      ok: false,
      error: { code: "SEF_DEADLINE", headersReceived: true },
    });
    await waitFor("the trickled connection closed", () => sentWhenClosed !== undefined, { timeoutMs: 5000 });
    expect(sentWhenClosed).toBeGreaterThan(0);
    expect(sentWhenClosed).toBeLessThan(trickleBytes);
  });

  it("refuses a garbage status line, oversized headers and oversized bodies", async () => {
    const big = "x".repeat(70 * 1024);
    const answers = [
      "garbage\r\n\r\n",
      `HTTP/1.1 200 OK\r\nX-Big: ${"h".repeat(20 * 1024)}\r\nContent-Length: 2\r\n\r\n{}`,
      `HTTP/1.1 200 OK\r\nContent-Length: ${big.length}\r\n\r\n${big}`,
      chunkedAnswer([big.slice(0, 40_000), big.slice(40_000)]),
    ];
    const server = await rawServer((socket, _request, index) => void socket.write(answers[index]!));
    const p = poller(server.port);
    expect(await p.get(request(server.port), 2000)).toMatchObject({
      ok: false,
      error: { code: "HPE_INVALID_CONSTANT" },
    });
    expect(await p.get(request(server.port), 2000)).toMatchObject({
      ok: false,
      error: { code: "HPE_HEADER_OVERFLOW" },
    });
    const declared = await p.get(request(server.port), 2000);
    expect(declared.ok ? undefined : declared.error).toMatchObject({
      kind: "too_large",
      status: 200,
      message: expect.stringContaining(`of ${big.length} bytes`),
    });
    const streamed = await p.get(request(server.port), 2000);
    expect(streamed.ok ? undefined : streamed.error).toMatchObject({ kind: "too_large", status: 200 });
    expect(server.connections).toBe(4); // each failure closed its connection
  });

  it("lets the request in flight finish when retired (the endpoint changed), then closes the connection", async () => {
    let closed = false;
    const server = await rawServer((socket) => {
      socket.on("close", () => (closed = true));
      setTimeout(() => socket.write(contentLengthAnswer), 100);
    });
    const p = poller(server.port);
    const answer = p.get(request(server.port), 2000);
    await waitFor("the request at the server", () => server.requests.length === 1);
    p.retire();
    expect(answered(await answer).status).toBe(200);
    await waitFor("the retired connection closed", () => closed, { timeoutMs: 5000 });
  });

  it("closes a kept-alive connection once it served no answer for idleSocketMs, and never one polled more often", async () => {
    // Times as the server saw them, per connection: its answers and its close. The bounds come from these, not from
    // the test's own pacing (a loaded machine may stretch a 100 ms pause past the idle time: then a new connection is
    // right, and the server saw the gap that allowed it).
    const idleSocketMs = 1000;
    const seen = new Map<Socket, { answeredAtMs: number[]; closedAtMs?: number }>();
    const server = await rawServer((socket) => {
      let connection = seen.get(socket);
      if (connection === undefined) {
        const created: { answeredAtMs: number[]; closedAtMs?: number } = { answeredAtMs: [] };
        socket.on("close", () => (created.closedAtMs = performance.now()));
        seen.set(socket, created);
        connection = created;
      }
      socket.write(contentLengthAnswer);
      connection.answeredAtMs.push(performance.now());
    });
    const p = poller(server.port, { idleSocketMs });
    for (let i = 0; i < 8; i++) {
      expect(answered(await p.get(request(server.port), 2000)).status).toBe(200);
      await sleep(100); // polls a tenth of the idle time apart
    }
    const connections = [...seen.values()];
    await waitFor("every idle connection closed", () => connections.every((c) => c.closedAtMs !== undefined), {
      timeoutMs: 5000,
    });
    const detail = JSON.stringify(connections);
    // Never closed while polled more often: each close came at least the idle time after the connection's last
    // answer, and a new connection opened only after such a gap.
    for (const c of connections) expect(c.closedAtMs! - c.answeredAtMs.at(-1)!, detail).toBeGreaterThanOrEqual(950);
    for (let i = 1; i < connections.length; i++)
      expect(
        connections[i]!.answeredAtMs[0]! - connections[i - 1]!.answeredAtMs.at(-1)!,
        detail,
      ).toBeGreaterThanOrEqual(950);
    expect(connections.flatMap((c) => c.answeredAtMs)).toHaveLength(8);
    expect(connections[0]!.answeredAtMs.length, detail).toBeGreaterThan(1); // it was reused, not one per poll
    expect(answered(await p.get(request(server.port), 2000)).status).toBe(200);
    expect(server.connections).toBe(connections.length + 1);
  });

  it("holds the process open only while a request is in flight, not for an idle kept-alive connection", async () => {
    const server = await rawServer((socket) => void setTimeout(() => socket.write(contentLengthAnswer), 300));
    const script = [
      `import { PlainHttpPoller } from ${JSON.stringify(new URL("../../src/agent/imds/plain-http-poller.ts", import.meta.url).pathname)};`,
      `const p = new PlainHttpPoller({ host: "127.0.0.1", port: ${server.port}, connectTimeoutMs: 2000, maxBodyBytes: 65536, idleSocketMs: 30000 });`,
      `const outcome = await p.get(Buffer.from("GET / HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n"), 5000);`,
      `process.stdout.write(String(outcome.ok && outcome.answer.status));`,
    ].join("\n");
    const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let stdout = "";
    child.stdout.on("data", (bytes: Buffer) => (stdout += bytes.toString()));
    const exitCode = await new Promise<number | null>((resolve) => {
      const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
      child.on("exit", (code) => (clearTimeout(timer), resolve(code)));
    });
    // Answered (held open through the 300 ms wait), then exited on its own with the connection still open: one held
    // to the idle close (30 s) would have been killed at 20 s, without an exit code.
    expect({ exitCode, stdout }).toEqual({ exitCode: 0, stdout: "200" });
    expect(server.connections).toBe(1);
  });

  it("fails a connection that does not open", async () => {
    const server = await rawServer(() => {});
    const port = server.port;
    await new Promise((r) => servers.pop()!.close(r));
    expect(await poller(port).get(request(port), 2000)).toMatchObject({ ok: false, error: { code: "ECONNREFUSED" } });
  });
});

describe("ImdsClient over the plain-http poller", () => {
  it("sends If-None-Match with the last ETag and takes a 304 with or without an ETag as the last document", async () => {
    const server = await rawServer((socket, req, index) => {
      if (index === 0) return void socket.write(contentLengthAnswer);
      expect(req).toContain('If-None-Match: "abc"\r\n');
      socket.write(
        index === 1 ? 'HTTP/1.1 304 Not Modified\r\nETag: "abc"\r\n\r\n' : "HTTP/1.1 304 Not Modified\r\n\r\n",
      );
    });
    const c = client(server.url);
    const first = await c.getScheduledEvents();
    expect(first.notModified).toBe(false);
    for (let i = 0; i < 2; i++) {
      const again = await c.getScheduledEvents();
      expect(again).toMatchObject({ notModified: true, body });
      expect(again.document).toBe(first.document);
    }
    expect(c.conditionalCounts.notModified).toBe(2);
    expect(server.connections).toBe(1);
    expect(server.requests[0]).toMatch(/^GET \/metadata\/scheduledevents\?api-version=2020-07-01 HTTP\/1\.1\r\n/);
    expect(server.requests[0]).toContain("Metadata: true\r\n");
    expect(server.requests[0]).not.toContain("If-None-Match");
  });

  it("polls over the poller: a kept-alive connection the server closes on the next request is replaced without a failed poll", async () => {
    // node:http hands this reset to the caller (a failed poll); the poller replaces the connection once
    const server = await rawServer((socket, _request, index) =>
      index === 1 ? void socket.destroy() : void socket.write(contentLengthAnswer),
    );
    const c = client(server.url);
    await c.getScheduledEvents();
    await expect(c.getScheduledEvents()).resolves.toMatchObject({ body });
    expect([server.requests.length, server.connections]).toEqual([3, 2]);
  });

  it("ends a poll in flight when the caller's signal aborts, and polls on a new connection after", async () => {
    const server = await rawServer((socket, _request, index) =>
      index === 0 ? undefined : void socket.write(contentLengthAnswer),
    );
    const c = client(server.url, { requestTimeoutMs: 5000, firstCallTimeoutMs: 5000 });
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error("stopping")), 100);
    // The caller's reason, not the 5 s deadline's timeout, ends it.
    await expect(c.getScheduledEvents(controller.signal)).rejects.toThrow("stopping");
    await expect(c.getScheduledEvents()).resolves.toMatchObject({ body });
    expect(server.connections).toBe(2);
  });

  it("takes a 304 it did not ask for as an http_error", async () => {
    const server = await rawServer((socket) => void socket.write("HTTP/1.1 304 Not Modified\r\n\r\n"));
    await expect(client(server.url).getScheduledEvents()).rejects.toMatchObject({ kind: "http_error", status: 304 });
  });
});

/** What a poll came to, in terms both paths must agree on. */
async function pollOutcome(c: ImdsClient): Promise<unknown> {
  try {
    const fetched = await c.getScheduledEvents();
    return {
      ok: true,
      incarnation: fetched.document.DocumentIncarnation,
      body: fetched.body,
      notModified: fetched.notModified,
    };
  } catch (err) {
    if (!(err instanceof ImdsRequestError)) throw err;
    return {
      ok: false,
      kind: err.kind,
      message: err.message,
      status: err.status,
      retryAfterMs: err.retryAfterMs === undefined ? undefined : Math.round(err.retryAfterMs / 1000),
    };
  }
}

describe("conformance with the node:http path", () => {
  const corpus: Record<string, string[]> = {
    "200 with Content-Length": [contentLengthAnswer],
    "200 chunked": [chunkedAnswer([body.slice(0, 10), body.slice(10)])],
    "200 chunked with a chunk extension": [
      `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n${body.length.toString(16)};name=value\r\n${body}\r\n0\r\n\r\n`,
    ],
    "200 delimited by the close": [`HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n${body}`],
    "HTTP/1.0 200": [`HTTP/1.0 200 OK\r\nContent-Length: ${body.length}\r\n\r\n${body}`],
    "100 Continue, then 200": [`HTTP/1.1 100 Continue\r\n\r\n${contentLengthAnswer}`],
    "200 malformed JSON": ["HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n{nope"],
    "200 empty body": ["HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"],
    "400": ['HTTP/1.1 400 Bad Request\r\nContent-Length: 17\r\n\r\n{"error":"nope"} '],
    "404 with Retry-After": ["HTTP/1.1 404 Not Found\r\nRetry-After: 7\r\nContent-Length: 0\r\n\r\n"],
    "429 with Retry-After, twice": [
      "HTTP/1.1 429 Too Many\r\nRetry-After: 3\r\nRetry-After: 9\r\nContent-Length: 0\r\n\r\n",
    ],
    "500 chunked": [chunkedAnswer(["oops"]).replace("200 OK", "500 Internal Server Error")],
    "410 delimited by the close": ["HTTP/1.1 410 Gone\r\n\r\ngone"],
    "302 redirect (not followed)": [
      "HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:1/elsewhere\r\nContent-Length: 0\r\n\r\n",
    ],
    "204 no content": ["HTTP/1.1 204 No Content\r\n\r\n"],
    "unsolicited 304": ["HTTP/1.1 304 Not Modified\r\n\r\n"],
    "200, then 304": [contentLengthAnswer, 'HTTP/1.1 304 Not Modified\r\nETag: "abc"\r\n\r\n'],
    "200, then the same body again": [contentLengthAnswer, contentLengthAnswer.replace('"abc"', '"def"')],
    "garbage status line": ["garbage\r\n\r\n"],
    "oversized headers": [`HTTP/1.1 200 OK\r\nX-Big: ${"h".repeat(20 * 1024)}\r\nContent-Length: 2\r\n\r\n{}`],
    "declared body over the cap": ["HTTP/1.1 200 OK\r\nContent-Length: 999999\r\n\r\n{}"],
    "chunked body over the cap": [chunkedAnswer(["x".repeat(3000), "y".repeat(3000)])],
    "cut off mid-body": [contentLengthAnswer.slice(0, -5)],
    "closed without an answer": [""],
  };

  it("sends back an ETag with bytes beyond ASCII exactly as received (latin1, like node:http)", async () => {
    const etag = Buffer.from([0x22, 0x63, 0x61, 0x66, 0xe9, 0x22]); // "café" in latin1
    const seen: unknown[] = [];
    for (const plainHttpPoller of [true, false]) {
      const server = await rawServer((socket, req, index) => {
        const matches = Buffer.from(req, "latin1").includes(
          Buffer.concat([Buffer.from("If-None-Match: "), etag, Buffer.from("\r\n")]),
        );
        if (index > 0 && matches) return void socket.write("HTTP/1.1 304 Not Modified\r\n\r\n");
        socket.write(
          Buffer.concat([
            Buffer.from(`HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\nETag: `),
            etag,
            Buffer.from(`\r\n\r\n${body}`),
          ]),
        );
      });
      const c = client(server.url, { plainHttpPoller });
      await c.getScheduledEvents();
      seen.push((await c.getScheduledEvents()).notModified);
    }
    expect(seen).toEqual([true, true]);
  });

  it.each(Object.keys(corpus))("%s", async (name) => {
    const outcomes: unknown[][] = [];
    for (const plainHttpPoller of [true, false]) {
      const answers = corpus[name]!;
      const server = await rawServer((socket, _request, index) => {
        const answer = answers[Math.min(index, answers.length - 1)]!;
        const closes =
          answer === "" || !/Content-Length|chunked/.test(answer) || answer === corpus["cut off mid-body"]![0];
        if (closes) socket.end(answer);
        else socket.write(answer);
      });
      const c = client(server.url, { plainHttpPoller, maxBodyBytes: 4096 });
      const seen: unknown[] = [];
      for (let i = 0; i < answers.length; i++) seen.push(await pollOutcome(c));
      outcomes.push(seen);
    }
    expect(outcomes[0]).toEqual(outcomes[1]);
  });
});
