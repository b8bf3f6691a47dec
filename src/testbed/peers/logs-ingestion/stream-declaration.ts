// What the Logs Ingestion service keeps of a row posted to a stream: the declared columns whose values fit their
// declared types. Like the service it never refuses a row for this — it drops undeclared columns and values of the
// wrong type silently (204) — so the peer counts every drop for tests to assert. The peer's own logic: pure.

export interface DeclaredColumn {
  readonly name: string;
  /** DCR stream declaration type: string, int, long, real, boolean, datetime, dynamic. */
  readonly type: string;
}

export interface KeptRow {
  /** The row as stored: declared, well-typed columns only. */
  readonly row: Record<string, unknown>;
  /** Properties that are not columns of the stream. */
  readonly undeclaredColumns: readonly string[];
  /** Declared columns whose value did not fit the declared type. */
  readonly mistypedColumns: readonly string[];
}

const dateTimePattern = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$/;

/** Whether a JSON value fits a stream column type (null fits every type). */
export function fitsColumnType(type: string, value: unknown): boolean {
  if (value === null) return true;
  switch (type.toLowerCase()) {
    case "string":
      return typeof value === "string";
    case "boolean":
      return typeof value === "boolean";
    case "int":
      return typeof value === "number" && Number.isInteger(value) && value >= -(2 ** 31) && value < 2 ** 31;
    case "long":
      return typeof value === "number" && Number.isSafeInteger(value);
    case "real":
      return typeof value === "number" && Number.isFinite(value);
    case "datetime":
      return typeof value === "string" && dateTimePattern.test(value) && !Number.isNaN(Date.parse(value));
    case "dynamic":
      return true;
    default:
      return false;
  }
}

/** Keeps what the service would keep of one posted row; a row that is not a JSON object keeps nothing. */
export function keepDeclaredColumns(posted: unknown, columns: readonly DeclaredColumn[]): KeptRow {
  if (posted === null || typeof posted !== "object" || Array.isArray(posted))
    return { row: {}, undeclaredColumns: [], mistypedColumns: [] };
  const typeByName = new Map(columns.map((c) => [c.name, c.type]));
  const row: Record<string, unknown> = {};
  const undeclaredColumns: string[] = [];
  const mistypedColumns: string[] = [];
  for (const [name, value] of Object.entries(posted as Record<string, unknown>)) {
    const type = typeByName.get(name);
    if (type === undefined) undeclaredColumns.push(name);
    else if (!fitsColumnType(type, value)) mistypedColumns.push(name);
    else row[name] = value;
  }
  return { row, undeclaredColumns, mistypedColumns };
}
