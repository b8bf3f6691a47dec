// Reads HTTP/1.1 responses from a connection's bytes with http-parser-js (pure JavaScript, node:http's old parser
// interface): status, headers, a body within a byte cap (declared or streamed), Content-Length or chunked, keep-alive.
// Pure: bytes in, one outcome per response out; the socket belongs to plain-http-poller.ts.
import httpParserJs from "http-parser-js";
import type { IncomingHttpHeaders } from "node:http";
import { ImdsRequestError } from "./errors.js";

const { HTTPParser } = httpParserJs;
// Header bytes as node:http reads them (latin1; the library's default, ascii, drops the high bit of each byte), so an
// ETag goes back in If-None-Match exactly as it came. Module-wide: this reader is the library's only user.
HTTPParser.encoding = "latin1";
type Parser = InstanceType<typeof HTTPParser>;
/** The parser's read position, which it keeps on itself (not in its typings). */
type ParserPosition = { offset: number; end: number };

/** node:http's default limit on a response's status line and headers (--max-http-header-size). */
export const maxHeaderBytesDefault = 16 * 1024;

/** The body buffer's first size, and the size it goes back to after a larger answer (see `start`). */
const bodyBufferBytes = 4 * 1024;

/** A complete answer: status, headers (lower-cased names; of a repeated header, the first) and the whole body. */
export interface ImdsAnswer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly text: string;
}

export type ReadProgress =
  | { readonly state: "partial" }
  /** `reusable`: the server keeps the connection and sent nothing after this response. */
  | { readonly state: "complete"; readonly answer: ImdsAnswer; readonly reusable: boolean }
  | { readonly state: "failed"; readonly error: NodeJS.ErrnoException };

const partial: ReadProgress = { state: "partial" };

/** One connection's response reader; `start()` before each request. */
export class ResponseReader {
  private readonly parser: Parser = new HTTPParser(HTTPParser.RESPONSE);
  private status = 0;
  private headers: IncomingHttpHeaders = {};
  /**
   * The body's bytes, in one buffer kept from answer to answer and grown as an answer needs. Not copies from Node's
   * shared 8 KiB pool: at a body per document change, a pool slab stays in use long enough to reach V8's old
   * generation, where its native memory waits for a full collection (test/bench/README.md, "Under churn").
   */
  private body: Buffer = Buffer.allocUnsafeSlow(bodyBufferBytes);
  private bodyBytes = 0;
  private keepAlive = false;
  private headerBytesBefore = 0;
  private outcome: ReadProgress = partial;
  /** True once a response's headers were read (a deadline then means "did not complete", not "did not answer"). */
  headersReceived = false;
  /** True once any byte of the answer arrived. */
  anyByteReceived = false;

  constructor(
    private readonly maxBodyBytes: number,
    private readonly maxHeaderBytes = maxHeaderBytesDefault,
  ) {
    this.parser.maxHeaderSize = Number.MAX_SAFE_INTEGER; // checked here, per response, over all its segments
    this.parser[HTTPParser.kOnHeadersComplete] = (info) =>
      this.onHeaders(info.statusCode, info.headers, info.shouldKeepAlive);
    this.parser[HTTPParser.kOnBody] = (chunk, offset, length) => this.onBody(chunk.subarray(offset, offset + length));
    this.parser[HTTPParser.kOnMessageComplete] = () => this.onComplete();
  }

  /** Forgets the last response: the next bytes are a new one. */
  start(): void {
    this.parser.initialize(HTTPParser.RESPONSE);
    this.status = 0;
    this.headers = {};
    if (this.body.length > bodyBufferBytes) this.body = Buffer.allocUnsafeSlow(bodyBufferBytes);
    this.bodyBytes = 0;
    this.headerBytesBefore = 0;
    this.outcome = partial;
    this.headersReceived = false;
    this.anyByteReceived = false;
  }

  /** Feeds bytes of the answer (kept only until this returns); the first outcome other than partial is final. */
  push(bytes: Buffer): ReadProgress {
    if (this.outcome.state !== "partial") return this.outcome;
    this.anyByteReceived = true;
    const result = this.parser.execute(bytes);
    if (result instanceof Error && this.outcome.state === "partial") this.fail(result as NodeJS.ErrnoException);
    if (this.outcome.state === "partial" && !this.headersReceived) {
      this.headerBytesBefore += bytes.length;
      if (this.headerBytesBefore > this.maxHeaderBytes) this.fail(headerOverflow());
    }
    return this.outcome;
  }

  /** The server closed the connection: a body delimited by the close is complete; anything else was cut off. */
  end(): ReadProgress {
    if (this.outcome.state !== "partial") return this.outcome;
    if (this.headersReceived) this.parser.finish(); // completes a body delimited by the close, nothing else
    if (this.outcome.state === "partial") {
      const message = this.headersReceived ? "the answer was cut off" : "socket hang up";
      this.outcome = { state: "failed", error: Object.assign(new Error(message), { code: "ECONNRESET" }) };
    }
    return this.outcome;
  }

  private onHeaders(status: number, raw: string[], shouldKeepAlive: boolean): number {
    const position = this.parser as unknown as ParserPosition;
    if (this.headerBytesBefore + position.offset > this.maxHeaderBytes) {
      this.fail(headerOverflow());
      return 1;
    }
    if (status >= 100 && status < 200 && status !== 101) return 0; // informational: the real answer follows
    this.headersReceived = true;
    this.status = status;
    this.keepAlive = shouldKeepAlive;
    const headers: Record<string, string> = {};
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i]!.toLowerCase();
      headers[name] ??= raw[i + 1]!;
    }
    this.headers = headers;
    const declared = Number(headers["content-length"]);
    if (Number.isFinite(declared) && declared > this.maxBodyBytes)
      this.fail(this.tooLarge(`of ${declared} bytes exceeds`));
    return 0;
  }

  private onBody(chunk: Buffer): void {
    if (this.outcome.state !== "partial") return;
    const end = this.bodyBytes + chunk.length;
    if (end > this.maxBodyBytes) return this.fail(this.tooLarge("exceeds"));
    if (end > this.body.length)
      this.body = grown(this.body, this.bodyBytes, Math.min(this.maxBodyBytes, Math.max(end, 2 * this.body.length)));
    chunk.copy(this.body, this.bodyBytes); // a copy: the bytes pushed are the caller's to reuse once push returns
    this.bodyBytes = end;
  }

  private onComplete(): void {
    if (this.outcome.state !== "partial") return;
    if (!this.headersReceived) return; // the end of an informational response
    const position = this.parser as unknown as ParserPosition;
    const text = this.body.toString("utf8", 0, this.bodyBytes);
    const reusable = this.keepAlive && position.offset >= position.end;
    this.outcome = { state: "complete", answer: { status: this.status, headers: this.headers, text }, reusable };
  }

  private fail(error: NodeJS.ErrnoException): void {
    if (this.outcome.state === "partial") this.outcome = { state: "failed", error };
  }

  private tooLarge(detail: string): NodeJS.ErrnoException {
    return new ImdsRequestError(
      "too_large",
      `IMDS body ${detail} the ${this.maxBodyBytes}-byte cap`,
      this.status,
    ) as unknown as NodeJS.ErrnoException;
  }
}

/** A buffer of `size` bytes holding the first `used` bytes of `from`. */
function grown(from: Buffer, used: number, size: number): Buffer {
  const to = Buffer.allocUnsafeSlow(size);
  from.copy(to, 0, 0, used);
  return to;
}

function headerOverflow(): NodeJS.ErrnoException {
  return Object.assign(new Error("Parse Error: Header overflow"), { code: "HPE_HEADER_OVERFLOW" });
}
