// What the testbed's commands share: parsers of their option values (ports, bounded integers, names from a list,
// repeatable values), the options every `emulate` peer has, and serving a peer until SIGTERM/SIGINT ends it.
import { InvalidArgumentError, type Command } from "commander";
import type { Logger } from "../support/logger.js";

/** A parser of whole numbers from `min` to `max`, or `min` and up (a bad value: commander's "argument is invalid", exit 2). */
export function integerFrom(min: number, max = Number.MAX_SAFE_INTEGER): (value: string) => number {
  const range = max === Number.MAX_SAFE_INTEGER ? `${min} or more` : `from ${min} to ${max}`;
  return (value) => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min || n > max) throw new InvalidArgumentError(`expected an integer ${range}`);
    return n;
  };
}

/** A TCP or UDP port, 0 = any free port. */
export const parsePort = integerFrom(0, 65535);

/** A parser that accepts only one of `allowed`. */
export function oneOf<T extends string>(allowed: readonly T[]): (value: string) => T {
  return (value) => {
    if (!(allowed as readonly string[]).includes(value))
      throw new InvalidArgumentError(`expected one of ${allowed.join(", ")}`);
    return value as T;
  };
}

/** Collects a repeatable option's values. */
export function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** Resolves at the first SIGTERM or SIGINT. */
export function stopSignal(): Promise<void> {
  return new Promise((resolve) => {
    const stop = (): void => resolve();
    process.once("SIGTERM", stop);
    process.once("SIGINT", stop);
  });
}

/**
 * Serves one peer until SIGTERM/SIGINT: a logger on stderr at `logLevel`, the peer started with it (`start` loads the
 * peer's module only now, so `--help` stays quick), `ready` once it listens; then the peer closed and `stopped` said.
 */
export async function servePeer<Peer extends { close(): Promise<void> }>(
  logLevel: string,
  start: (logger: Logger) => Promise<Peer>,
  say: { ready(peer: Peer, logger: Logger): void; stopped(peer: Peer, logger: Logger): void },
): Promise<void> {
  const { createLogger } = await import("../support/logger.js");
  const logger = createLogger({ level: logLevel });
  const peer = await start(logger);
  say.ready(peer, logger);
  await stopSignal();
  await peer.close();
  say.stopped(peer, logger);
  process.exitCode = 0;
}

export interface PeerCommandSpec {
  readonly name: string;
  readonly description: string;
  /** --port: its protocol (default TCP), a note for its help, its default (default 0, any free port). */
  readonly port?: { readonly protocol?: "TCP" | "UDP"; readonly note?: string; readonly default?: number };
}

/** `emulate NAME` with the options every peer has: --port and --host (default 127.0.0.1). */
export function peerCommand(emulate: Command, spec: PeerCommandSpec): Command {
  return emulate
    .command(spec.name)
    .description(spec.description)
    .option(
      "--port <n>",
      `${spec.port?.protocol ?? "TCP"} port (0 = any free port${spec.port?.note ? `; ${spec.port.note}` : ""})`,
      parsePort,
      spec.port?.default ?? 0,
    )
    .option("--host <addr>", "listen address", "127.0.0.1");
}
