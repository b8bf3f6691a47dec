// The one protobuf body the peer decodes: meta/v1 DeleteOptions, which client-go's typed clients (kubectl drain
// --disable-eviction) send on DELETE as `application/vnd.kubernetes.protobuf`. Pure: the "k8s\0" envelope,
// runtime.Unknown, then the DeleteOptions fields; anything else is refused by the caller with 415.
import { badRequest } from "./status.js";

export const protobufMediaType = "application/vnd.kubernetes.protobuf";
const envelopeMagic = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

interface Field {
  readonly number: number;
  /** Varint value (wire type 0) or bytes (wire type 2). */
  readonly value: bigint | Buffer;
}

function readVarint(buffer: Buffer, offset: number): { value: bigint; next: number } {
  let value = 0n;
  let shift = 0n;
  for (let i = offset; i < buffer.length && shift < 70n; i++) {
    const byte = buffer[i] ?? 0;
    value |= BigInt(byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) return { value, next: i + 1 };
    shift += 7n;
  }
  throw badRequest("the protobuf body is truncated");
}

/** The fields of one message (wire types 0 and 2; 1 and 5 are skipped). */
export function protobufFields(buffer: Buffer): Field[] {
  const fields: Field[] = [];
  let offset = 0;
  while (offset < buffer.length) {
    const key = readVarint(buffer, offset);
    const number = Number(key.value >> 3n);
    const wireType = Number(key.value & 7n);
    offset = key.next;
    if (wireType === 0) {
      const varint = readVarint(buffer, offset);
      fields.push({ number, value: varint.value });
      offset = varint.next;
    } else if (wireType === 2) {
      const length = readVarint(buffer, offset);
      const end = length.next + Number(length.value);
      if (end > buffer.length) throw badRequest("the protobuf body is truncated");
      fields.push({ number, value: buffer.subarray(length.next, end) });
      offset = end;
    } else if (wireType === 1 || wireType === 5) {
      offset += wireType === 1 ? 8 : 4;
    } else {
      throw badRequest(`unsupported protobuf wire type ${wireType}`);
    }
  }
  return fields;
}

function text(value: bigint | Buffer): string {
  return Buffer.isBuffer(value) ? value.toString("utf8") : String(value);
}

/** Signed int64 from its two's-complement varint. */
function int64(value: bigint | Buffer): number {
  const raw = typeof value === "bigint" ? value : 0n;
  return Number(BigInt.asIntN(64, raw));
}

/** DeleteOptions from a protobuf-encoded body (envelope included), in its JSON shape. */
export function decodeDeleteOptions(body: Buffer): Record<string, unknown> {
  if (!body.subarray(0, 4).equals(envelopeMagic)) throw badRequest("the protobuf body lacks the k8s envelope");
  const unknown = protobufFields(body.subarray(4));
  const raw = unknown.find((f) => f.number === 2)?.value;
  const options: Record<string, unknown> = {};
  const dryRun: string[] = [];
  for (const field of Buffer.isBuffer(raw) ? protobufFields(raw) : []) {
    if (field.number === 1) options.gracePeriodSeconds = int64(field.value);
    else if (field.number === 2 && Buffer.isBuffer(field.value)) {
      const preconditions: Record<string, string> = {};
      for (const p of protobufFields(field.value))
        preconditions[p.number === 1 ? "uid" : "resourceVersion"] = text(p.value);
      options.preconditions = preconditions;
    } else if (field.number === 3) options.orphanDependents = field.value === 1n;
    else if (field.number === 4) options.propagationPolicy = text(field.value);
    else if (field.number === 5) dryRun.push(text(field.value));
  }
  if (dryRun.length > 0) options.dryRun = dryRun;
  return options;
}
