// The scheduled-events GET over plain http without node:http: one kept-alive net.Socket, request bytes built once by
// the caller, answers read by response-reader.ts, one timer as the total deadline (which alone holds the process
// open). A kept-alive socket the server closed between polls is replaced once, transparently; every other failure is
// handed back for classification.
import { connect, type Socket } from "node:net";
import { performance } from "node:perf_hooks";
import { ResponseReader, type ImdsAnswer } from "./response-reader.js";

/** Code of the error raised when a connection does not open within `connectTimeoutMs`. */
export const connectTimeoutCode = "SEF_CONNECT_TIMEOUT";
/** Code of the error a request is ended with when its total deadline passes. */
export const deadlineCode = "SEF_DEADLINE";

/** Size of the one buffer answers are read into (a longer answer arrives in several reads). */
const readBufferBytes = 16 * 1024;

export type RequestOutcome = { ok: true; answer: ImdsAnswer } | { ok: false; error: NodeJS.ErrnoException };

export interface PlainHttpPollerOptions {
  readonly host: string;
  readonly port: number;
  readonly connectTimeoutMs: number;
  readonly maxBodyBytes: number;
  /** An idle kept-alive connection is closed after this long. */
  readonly idleSocketMs: number;
}

/** The request in flight. */
interface Exchange {
  readonly request: Buffer;
  readonly resolve: (outcome: RequestOutcome) => void;
  /** A replacement connection was already tried for this request. */
  retried: boolean;
  /** The connection it went out on had served an answer before. */
  reusedSocket: boolean;
}

/** Sends the same kind of GET again and again over one kept-alive connection; one request at a time. */
export class PlainHttpPoller {
  private socket: Socket | undefined;
  /** The socket has completed an answer (so a failure before any byte may be the server's idle close). */
  private socketServed = false;
  private current: Exchange | undefined;
  /** Replaced (the endpoint changed): the request in flight may finish, then the connection closes. */
  private retired = false;
  private readonly reader: ResponseReader;
  /** Monotonic time the connection last finished an answer (the idle close counts from it). */
  private lastAnswerMs = 0;
  /** The idle close's timer: armed once per connection and re-armed lazily, not moved on every read and write. */
  private idleTimer: NodeJS.Timeout | undefined;
  private readonly readBuffer = Buffer.allocUnsafe(readBufferBytes);

  constructor(private readonly options: PlainHttpPollerOptions) {
    this.reader = new ResponseReader(options.maxBodyBytes);
  }

  /** True while a request is in flight (callers send one at a time; a second waits for the node:http path). */
  get busy(): boolean {
    return this.current !== undefined;
  }

  /**
   * Sends `request` and reads its whole answer within `timeoutMs`; never rejects. `watchAbort`, if given, registers
   * the caller's cancellation and returns its unregistration.
   */
  get(
    request: Buffer,
    timeoutMs: number,
    watchAbort?: (onAbort: (reason: unknown) => void) => () => void,
  ): Promise<RequestOutcome> {
    return new Promise<RequestOutcome>((resolve) => {
      const finish = (outcome: RequestOutcome): void => {
        if (this.current !== exchange) return;
        this.current = undefined;
        clearTimeout(deadline);
        unwatch?.();
        if (!outcome.ok || this.retired) this.dropSocket();
        resolve(outcome);
      };
      const exchange: Exchange = { request, resolve: finish, retried: false, reusedSocket: false };
      this.current = exchange;
      const deadline = setTimeout(() => {
        const error = Object.assign(new Error(`deadline of ${timeoutMs} ms passed`), {
          code: deadlineCode,
          headersReceived: this.reader.headersReceived,
        });
        finish({ ok: false, error });
      }, timeoutMs);
      const unwatch = watchAbort?.((reason) =>
        finish({ ok: false, error: (reason ?? new Error("aborted")) as NodeJS.ErrnoException }),
      );
      this.send(exchange);
    });
  }

  /** Closes the connection once the request in flight (if any) has its answer: the endpoint changed. */
  retire(): void {
    this.retired = true;
    if (this.current === undefined) this.dropSocket();
  }

  /** Closes the connection; a request in flight fails. */
  close(): void {
    this.current?.resolve({
      ok: false,
      error: Object.assign(new Error("the client is closed"), { code: "ECONNRESET" }),
    });
    this.dropSocket();
  }

  private send(exchange: Exchange): void {
    this.reader.start();
    exchange.reusedSocket = this.socket !== undefined && this.socketServed;
    const socket = this.socket ?? this.openSocket();
    socket.write(exchange.request);
  }

  private openSocket(): Socket {
    const { host, port, connectTimeoutMs, idleSocketMs } = this.options;
    // Answers are read into one buffer of the poller's (no stream chunk per read); the reader copies what it keeps.
    const onread = {
      buffer: this.readBuffer,
      callback: (bytes: number, buffer: Uint8Array): boolean => {
        this.onData(socket, Buffer.from(buffer.buffer, buffer.byteOffset, bytes));
        return true; // keep reading
      },
    };
    const socket: Socket = connect({ host, port, noDelay: true, onread });
    // Never holds the process open: a request in flight is held by its deadline timer, an idle connection by nothing.
    socket.unref();
    this.socket = socket;
    this.socketServed = false;
    const connectTimer = setTimeout(() => {
      this.onSocketFailure(
        socket,
        Object.assign(new Error(`connection not open after ${connectTimeoutMs} ms`), { code: connectTimeoutCode }),
      );
    }, connectTimeoutMs);
    socket.once("connect", () => clearTimeout(connectTimer));
    this.lastAnswerMs = performance.now();
    this.armIdleClose(socket, idleSocketMs);
    socket.on("error", (error: NodeJS.ErrnoException) => this.onSocketFailure(socket, error));
    socket.on("close", () => {
      clearTimeout(connectTimer);
      this.onSocketClosed(socket);
    });
    return socket;
  }

  /** Closes `socket` once it has served no answer for `idleSocketMs` (checked when the timer fires; re-armed for the rest). */
  private armIdleClose(socket: Socket, delayMs: number): void {
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      if (this.socket !== socket) return;
      const { idleSocketMs } = this.options;
      const idleForMs = performance.now() - this.lastAnswerMs;
      if (this.current === undefined && idleForMs >= idleSocketMs) return this.dropSocket();
      this.armIdleClose(socket, this.current === undefined ? idleSocketMs - idleForMs : idleSocketMs);
    }, delayMs).unref();
  }

  private onData(socket: Socket, bytes: Buffer): void {
    const exchange = this.current;
    if (socket !== this.socket || exchange === undefined) return this.dropSocket(socket); // bytes nobody asked for
    const progress = this.reader.push(bytes);
    if (progress.state === "partial") return;
    if (progress.state === "failed") return exchange.resolve({ ok: false, error: progress.error });
    this.socketServed = true;
    this.lastAnswerMs = performance.now();
    if (!progress.reusable) this.dropSocket();
    exchange.resolve({ ok: true, answer: progress.answer });
  }

  private onSocketFailure(socket: Socket, error: NodeJS.ErrnoException): void {
    if (socket !== this.socket) return;
    const exchange = this.current;
    if (exchange !== undefined && this.mayRetry(exchange, error.code)) return this.retry(exchange);
    if (exchange !== undefined) exchange.resolve({ ok: false, error });
    else this.dropSocket();
  }

  private onSocketClosed(socket: Socket): void {
    if (socket !== this.socket) return;
    const exchange = this.current;
    if (exchange === undefined) return this.dropSocket(); // the server closed an idle connection
    if (this.mayRetry(exchange, "ECONNRESET")) return this.retry(exchange);
    const progress = this.reader.end();
    this.dropSocket();
    if (progress.state === "complete") exchange.resolve({ ok: true, answer: progress.answer });
    else if (progress.state === "failed") exchange.resolve({ ok: false, error: progress.error });
  }

  /** Like node:http's agent with a reused socket: a connection the server closed before answering is replaced once. */
  private mayRetry(exchange: Exchange, code: string | undefined): boolean {
    return (
      exchange.reusedSocket &&
      !exchange.retried &&
      !this.reader.anyByteReceived &&
      (code === "ECONNRESET" || code === "EPIPE")
    );
  }

  private retry(exchange: Exchange): void {
    exchange.retried = true;
    this.dropSocket();
    this.send(exchange);
  }

  private dropSocket(socket: Socket | undefined = this.socket): void {
    if (socket === undefined) return;
    if (socket === this.socket) {
      this.socket = undefined;
      clearTimeout(this.idleTimer);
    }
    socket.destroy();
  }
}
