// What the testbed's commands share: parsers of their option values (ports, bounded integers, names from a list,
// repeatable values), the options every `emulate` peer has, and the wait for SIGTERM/SIGINT that ends a peer.
import { InvalidArgumentError, type Command } from "commander";

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
