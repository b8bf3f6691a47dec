// Does anything accept a TCP connection at host:port within the timeout? (The only network use of the resolver
// besides the opt-in DHCP query and the verification of a candidate; no HTTP request is sent.)
import { connect } from "node:net";

/** What asking a candidate found: whether it answered as wanted, and what it did (bounded text). */
export interface CandidateAnswer {
  answered: boolean;
  detail: string;
}

/** Asks a candidate at `where` one thing within `timeoutMs` (or until `signal` aborts); never rejects. */
export type CandidateCheck<Where extends unknown[]> = (
  ...args: [...where: Where, timeoutMs: number, signal?: AbortSignal]
) => Promise<CandidateAnswer>;

export type Probe = CandidateCheck<[host: string, port: number]>;

export const tcpProbe: Probe = (host, port, timeoutMs, signal) =>
  new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (answered: boolean, detail: string): void => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      socket.destroy();
      resolve({ answered, detail });
    };
    const timer = setTimeout(() => done(false, `no connection within ${timeoutMs} ms`), timeoutMs);
    const onAbort = (): void => done(false, "aborted");
    signal?.addEventListener("abort", onAbort, { once: true });
    socket.once("connect", () => done(true, "connected"));
    socket.once("error", (err: NodeJS.ErrnoException) => done(false, err.code ?? err.message));
  });
