// Whether a JSON value fits a record column (pure): its type as a DCR stream declares it, and the JSON shape a dynamic
// column holds. The stream validator (stream-schema.ts) and the record validator (record-validator.ts) share it.
import type { ColumnSpec, ColumnType } from "./record.js";

/** ISO 8601 date-time with an explicit offset or Z (what the agent writes), e.g. 2024-05-01T12:00:00.000Z. */
const isoDateTime = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;

const int32Min = -2_147_483_648;
const int32Max = 2_147_483_647;

/** Why `value` does not fit a column of `type`, or undefined when it does (null always fits). */
export function typeProblem(type: ColumnType, value: unknown): string | undefined {
  if (value === null) return undefined;
  switch (type) {
    case "string":
      return typeof value === "string" ? undefined : `expected a string, got ${describeValue(value)}`;
    case "boolean":
      return typeof value === "boolean" ? undefined : `expected a boolean, got ${describeValue(value)}`;
    case "real":
      return typeof value === "number" && Number.isFinite(value)
        ? undefined
        : `expected a number, got ${describeValue(value)}`;
    case "int":
      if (typeof value !== "number" || !Number.isInteger(value))
        return `expected an integer, got ${describeValue(value)}`;
      return value >= int32Min && value <= int32Max ? undefined : `integer ${value} is outside the 32-bit range`;
    case "long":
      return typeof value === "number" && Number.isSafeInteger(value)
        ? undefined
        : `expected an integer, got ${describeValue(value)}`;
    case "datetime":
      if (typeof value !== "string") return `expected an ISO 8601 date-time string, got ${describeValue(value)}`;
      return isoDateTime.test(value) && !Number.isNaN(Date.parse(value))
        ? undefined
        : `"${value}" is not an ISO 8601 date-time`;
    case "dynamic":
      return typeof value === "function" || typeof value === "symbol" || typeof value === "bigint"
        ? `expected a JSON value, got ${describeValue(value)}`
        : undefined;
  }
}

/** Why `value` is not the JSON a dynamic column holds (`ColumnSpec.json`), or undefined when it is (or has no shape). */
export function shapeProblem(json: ColumnSpec["json"], value: unknown): string | undefined {
  if (json === "string[]") {
    return Array.isArray(value) && value.every((v) => typeof v === "string")
      ? undefined
      : `expected an array of strings, got ${describeValue(value)}`;
  }
  if (json === "{string: string}") {
    const isObject = typeof value === "object" && value !== null && !Array.isArray(value);
    return isObject && Object.values(value).every((v) => typeof v === "string")
      ? undefined
      : `expected an object of strings, got ${describeValue(value)}`;
  }
  return undefined;
}

/** A value's kind as messages name it ("an array", "an object", "string", "NaN"). */
export function describeValue(value: unknown): string {
  if (Array.isArray(value)) return "an array";
  if (typeof value === "number" && !Number.isFinite(value)) return String(value);
  return typeof value === "object" ? "an object" : typeof value;
}
