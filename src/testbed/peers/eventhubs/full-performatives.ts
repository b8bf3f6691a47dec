// Makes rhea write every AMQP performative, error and terminus with all of its fields, like the service does: rhea
// drops trailing unset fields, and Microsoft's Python clients read fields by position (BEGIN[4], ATTACH[13], ...).
import rhea from "rhea";

/**
 * Field count of each composite the AMQP 1.0 specification defines that clients read by position, by descriptor code.
 * Trailing null fields are equivalent to absent ones in the specification, so padding changes no meaning.
 */
export const amqpCompositeFieldCounts: ReadonlyMap<number, number> = new Map([
  [0x10, 10], // open
  [0x11, 8], // begin
  [0x12, 14], // attach
  [0x13, 11], // flow
  [0x14, 11], // transfer (the payload follows field 11)
  [0x15, 6], // disposition
  [0x16, 3], // detach
  [0x17, 1], // end
  [0x18, 1], // close
  [0x1d, 3], // error
  [0x25, 1], // rejected
  [0x27, 3], // modified
  [0x28, 11], // source
  [0x29, 7], // target
  [0x40, 1], // sasl-mechanisms
  [0x44, 2], // sasl-outcome
]);

/**
 * Fields written with a value instead of null, by descriptor code and field index: Microsoft's Python client compares
 * BEGIN's handle-max with a number without applying the specification default, and merges ATTACH's properties into a
 * dictionary without a null check.
 */
const explicitDefaults: ReadonlyMap<number, ReadonlyMap<number, () => unknown>> = new Map([
  [0x11, new Map([[4, () => rhea.types.wrap_uint(4294967295)]])], // begin: handle-max
  [0x12, new Map([[13, () => rhea.types.wrap_symbolic_map({})]])], // attach: properties
]);

function isNull(item: unknown): boolean {
  return item === undefined || item === null || (item as TypedValue).type?.typecode === 0x40;
}

interface TypedValue {
  type?: { typecode: number };
  value?: unknown;
  descriptor?: { value?: unknown };
}

interface RheaWriter {
  write(o: TypedValue): void;
}

type RheaTypes = typeof rhea.types & {
  Writer: { prototype: RheaWriter };
  List32(items: unknown[]): TypedValue;
};

const installedMarker = Symbol.for("sef.fullLengthPerformatives");

/** The padded form of a described list shorter than its composite's field count (undefined when nothing to pad). */
export function paddedComposite(o: TypedValue, list32: (items: unknown[]) => TypedValue): TypedValue | undefined {
  if (o.descriptor === undefined || !Array.isArray(o.value)) return undefined;
  const code = Number(o.descriptor.value);
  const fieldCount = amqpCompositeFieldCounts.get(code);
  if (fieldCount === undefined) return undefined;
  const defaults = explicitDefaults.get(code);
  const value = o.value as unknown[];
  const missingDefault = defaults !== undefined && [...defaults.keys()].some((i) => isNull(value[i]));
  if (value.length >= fieldCount && !missingDefault) return undefined;
  // rhea's writer encodes an undefined list item as null.
  const items: unknown[] = Array.from({ length: fieldCount }, (_, i) =>
    isNull(value[i]) ? defaults?.get(i)?.() : value[i],
  );
  const padded = list32(items);
  padded.descriptor = o.descriptor;
  return padded;
}

/** Installs the padding into rhea's writer once per process (idempotent). */
export function installFullLengthPerformatives(): void {
  const types = rhea.types as RheaTypes;
  const prototype = types.Writer.prototype as RheaWriter & { [installedMarker]?: boolean };
  if (prototype[installedMarker]) return;
  const write = prototype.write;
  prototype.write = function writeFullLength(this: RheaWriter, o: TypedValue): void {
    const padded = o && o.type !== undefined ? paddedComposite(o, (items) => types.List32(items)) : undefined;
    write.call(this, padded ?? o);
  };
  prototype[installedMarker] = true;
}
