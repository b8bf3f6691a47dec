// A raw TCP connection to a local server, for tests of connection limits and slow clients: what it received, and
// promises for its first byte and its end (no sleeps: callers wait on these).
import { connect, type Socket } from "node:net";

export interface RawConnection {
  readonly socket: Socket;
  /** Everything received so far. */
  received(): string;
  /** Resolves when the server has sent something (rejects if the connection ends first). */
  readonly firstData: Promise<void>;
  /** Resolves when the connection is closed, by either side. */
  readonly closed: Promise<void>;
}

/** Connects to host:port; resolves once connected. */
export async function openRawConnection(host: string, port: number): Promise<RawConnection> {
  const socket = connect({ host, port });
  let text = "";
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  const firstData = new Promise<void>((resolve, reject) => {
    socket.once("data", () => resolve());
    socket.once("close", () => reject(new Error("closed before any data")));
  });
  firstData.catch(() => undefined);
  socket.on("data", (chunk: Buffer) => (text += chunk.toString("latin1")));
  socket.on("error", () => undefined); // a reset shows as "close"
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  return { socket, received: () => text, firstData, closed };
}
