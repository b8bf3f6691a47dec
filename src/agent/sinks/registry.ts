// The sink registry: maps a `--sink SPEC` (type[:argument]) to the factory that builds it; the configuration schema
// takes each sink's section from here. Adding a sink = one folder (settings, encode, classify, sink, factory; see
// sinks/README.md) + its line in all.ts.
import type { SinkFactory } from "./sink.js";
import * as everySink from "./all.js";
import { SinkSpecError } from "./errors.js";

/**
 * Every sink's factory, in the order of their types (all.ts exports each under its type, and a module namespace lists
 * its exports sorted by name): the configuration's rules and reference take them in this order.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- heterogeneous settings types
export const sinkFactories: readonly SinkFactory<any>[] = Object.values(everySink);

export interface ParsedSinkSpec {
  readonly type: string;
  readonly argument: string | undefined;
}

/** Splits `type[:argument]`; throws with a message naming the spec when the type is unknown or malformed. */
export function parseSinkSpec(spec: string): ParsedSinkSpec {
  const colon = spec.indexOf(":");
  const type = (colon === -1 ? spec : spec.slice(0, colon)).trim();
  const argument = colon === -1 ? undefined : spec.slice(colon + 1);
  const factory = sinkFactories.find((f) => f.section === type);
  if (!factory) {
    throw new SinkSpecError(
      `unknown sink "${type}" in "${spec}" (known: ${sinkFactories.map((f) => f.section).join(", ")})`,
    );
  }
  if (factory.argument === "required" && !argument)
    throw new SinkSpecError(`sink "${type}" needs an argument: ${type}:VALUE`);
  if (factory.argument === "none" && argument !== undefined)
    throw new SinkSpecError(`sink "${type}" takes no argument (got "${spec}")`);
  return { type, argument };
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- heterogeneous settings types
export function findSinkFactory(type: string): SinkFactory<any> {
  const factory = sinkFactories.find((f) => f.section === type);
  if (!factory) throw new SinkSpecError(`unknown sink "${type}"`);
  return factory;
}
