// Which partition Event Hubs assigns to a partition key: Bob Jenkins' lookup3 (hashlittle2) over the key's UTF-8 bytes,
// folded to 16 bits, modulo the partition count — the service's own mapping, as the SDK's buffered producer reproduces it
// (not exported by @azure/event-hubs). A protocol fact both sides share: the agent's hash routing places an event exactly
// where its partition key would put it, and the testbed's Event Hubs peer places keyed events the way the service does.

function rotate(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}

/** lookup3 hashlittle2 with zero seeds; returns the two 32-bit results (b, c). */
function lookup3(data: Buffer): { b: number; c: number } {
  let a = (0xdeadbeef + data.length) >>> 0;
  let b = a;
  let c = a;
  let offset = 0;
  let remaining = data.length;
  while (remaining > 12) {
    a = (a + data.readUInt32LE(offset)) >>> 0;
    b = (b + data.readUInt32LE(offset + 4)) >>> 0;
    c = (c + data.readUInt32LE(offset + 8)) >>> 0;
    // mix(a, b, c)
    a = ((a - c) ^ rotate(c, 4)) >>> 0;
    c = (c + b) >>> 0;
    b = ((b - a) ^ rotate(a, 6)) >>> 0;
    a = (a + c) >>> 0;
    c = ((c - b) ^ rotate(b, 8)) >>> 0;
    b = (b + a) >>> 0;
    a = ((a - c) ^ rotate(c, 16)) >>> 0;
    c = (c + b) >>> 0;
    b = ((b - a) ^ rotate(a, 19)) >>> 0;
    a = (a + c) >>> 0;
    c = ((c - b) ^ rotate(b, 4)) >>> 0;
    b = (b + a) >>> 0;
    offset += 12;
    remaining -= 12;
  }
  if (remaining === 0) return { b, c };
  // The last 1..12 bytes, little-endian into a, b, c.
  const words = [0, 0, 0];
  for (let i = 0; i < remaining; i++) words[i >> 2]! += data[offset + i]! * 2 ** (8 * (i & 3));
  a = (a + words[0]!) >>> 0;
  b = (b + words[1]!) >>> 0;
  c = (c + words[2]!) >>> 0;
  // final(a, b, c)
  c = ((c ^ b) - rotate(b, 14)) >>> 0;
  a = ((a ^ c) - rotate(c, 11)) >>> 0;
  b = ((b ^ a) - rotate(a, 25)) >>> 0;
  c = ((c ^ b) - rotate(b, 16)) >>> 0;
  a = ((a ^ c) - rotate(c, 4)) >>> 0;
  b = ((b ^ a) - rotate(a, 14)) >>> 0;
  c = ((c ^ b) - rotate(b, 24)) >>> 0;
  return { b, c };
}

/** Index of the partition (0-based, into the hub's partition ids) that Event Hubs assigns to `partitionKey`. */
export function partitionIndexForKey(partitionKey: string, partitionCount: number): number {
  const { b, c } = lookup3(Buffer.from(partitionKey, "utf8"));
  const folded = ((c ^ b) << 16) >> 16; // low 16 bits, signed
  return Math.abs(folded % partitionCount);
}
