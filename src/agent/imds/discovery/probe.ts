// Does anything accept a TCP connection at host:port within the timeout? (The only network use of the resolver
// besides the opt-in DHCP query; no HTTP request is sent.)
import { connect } from "node:net";

export type Probe = (
  host: string,
  port: number,
  timeoutMs: number,
  signal?: AbortSignal,
) => Promise<{ answered: boolean; detail: string }>;

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
