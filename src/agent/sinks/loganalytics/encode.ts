// Log Analytics sink encoding (pure request planning): splits rows, in order, into requests whose JSON array body stays
// within a byte limit. The body of a request is `[row,row,…]`: 2 bytes of brackets plus one comma between rows.

/** Bytes of the JSON array holding rows of these sizes. */
export function jsonArrayBytes(rowBytes: readonly number[]): number {
  if (rowBytes.length === 0) return 2;
  return rowBytes.reduce((sum, b) => sum + b, 0) + rowBytes.length + 1;
}

/** The JSON array of rows already encoded as JSON (exactly `JSON.stringify` of the parsed rows, without re-encoding them). */
export function jsonArrayOf(rowsJson: readonly string[]): string {
  return `[${rowsJson.join(",")}]`;
}

/** Whether a row of `rowBytes` fits a request on its own. */
export function rowFitsRequest(rowBytes: number, maxRequestBytes: number): boolean {
  return rowBytes + 2 <= maxRequestBytes;
}

/**
 * Groups items (each `bytes` long, all fitting on their own) into consecutive requests of at most
 * `maxRequestBytes` of JSON. Returns the items of each request, in order.
 */
export function planRequests<T extends { readonly bytes: number }>(
  items: readonly T[],
  maxRequestBytes: number,
): T[][] {
  const requests: T[][] = [];
  let current: T[] = [];
  let currentBytes = 2; // "[]"
  for (const item of items) {
    if (!rowFitsRequest(item.bytes, maxRequestBytes))
      throw new RangeError(`a row of ${item.bytes} bytes cannot fit a request`);
    const added = item.bytes + (current.length === 0 ? 0 : 1);
    if (current.length > 0 && currentBytes + added > maxRequestBytes) {
      requests.push(current);
      current = [];
      currentBytes = 2;
      currentBytes += item.bytes;
    } else {
      currentBytes += added;
    }
    current.push(item);
  }
  if (current.length > 0) requests.push(current);
  return requests;
}
