// Parses the `apache.org:selector-filter:string` expressions Event Hubs receivers attach with, and resolves them to
// the first index of a partition to deliver. Pure logic.
import type { StoredEvent } from "./store.js";

export type StartPosition =
  | { readonly kind: "earliest" }
  | { readonly kind: "latest" }
  | { readonly kind: "offset"; readonly offset: bigint; readonly inclusive: boolean }
  | { readonly kind: "sequenceNumber"; readonly sequenceNumber: number; readonly inclusive: boolean }
  | { readonly kind: "enqueuedTime"; readonly enqueuedTimeMs: number };

const selectorPattern =
  /^\s*amqp\.annotation\.(x-opt-offset|x-opt-sequence-number|x-opt-enqueued-time)\s*(>=|>)\s*'([^']*)'\s*$/i;

/** Parses a selector such as `amqp.annotation.x-opt-offset > '-1'`. No filter at all means "from the start". */
export function parseSelector(filter: string | undefined): StartPosition {
  if (filter === undefined || filter.trim() === "") return { kind: "earliest" };
  const match = selectorPattern.exec(filter);
  if (!match) throw new Error(`unsupported selector filter: ${filter}`);
  const field = match[1]!.toLowerCase();
  const inclusive = match[2] === ">=";
  const value = match[3]!;
  if (field === "x-opt-offset") {
    if (value === "@latest") return { kind: "latest" };
    if (value === "-1") return { kind: "earliest" };
    if (!/^-?\d+$/.test(value)) throw new Error(`offset in selector is not a number: ${value}`);
    return { kind: "offset", offset: BigInt(value), inclusive };
  }
  const numeric = Number(value);
  if (!Number.isFinite(numeric)) throw new Error(`value in selector is not a number: ${value}`);
  if (field === "x-opt-sequence-number") return { kind: "sequenceNumber", sequenceNumber: numeric, inclusive };
  return { kind: "enqueuedTime", enqueuedTimeMs: numeric };
}

/** Index of the first event at or after the position (events.length when none yet). */
export function startIndex(position: StartPosition, events: readonly StoredEvent[]): number {
  const firstWhere = (predicate: (e: StoredEvent) => boolean): number => {
    const index = events.findIndex(predicate);
    return index === -1 ? events.length : index;
  };
  switch (position.kind) {
    case "earliest":
      return 0;
    case "latest":
      return events.length;
    case "offset":
      return firstWhere((e) =>
        position.inclusive ? BigInt(e.offset) >= position.offset : BigInt(e.offset) > position.offset,
      );
    case "sequenceNumber":
      return firstWhere((e) =>
        position.inclusive ? e.sequenceNumber >= position.sequenceNumber : e.sequenceNumber > position.sequenceNumber,
      );
    case "enqueuedTime":
      return firstWhere((e) => e.enqueuedTimeMs > position.enqueuedTimeMs);
  }
}
