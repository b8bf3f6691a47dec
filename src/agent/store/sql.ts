// Small typed helpers over node:sqlite: prepared statements with parameter and row types, and IMMEDIATE transactions.
import type { DatabaseSync } from "node:sqlite";

/** A prepared statement that returns rows of type R for parameters P. */
export interface Query<P extends unknown[], R> {
  get(...params: P): R | undefined;
  all(...params: P): R[];
  run(...params: P): { changes: number | bigint; lastInsertRowid: number | bigint };
}

export function query<P extends unknown[], R>(db: DatabaseSync, sql: string): Query<P, R> {
  return db.prepare(sql) as unknown as Query<P, R>;
}

/**
 * Runs `body` in one IMMEDIATE transaction: committed if it returns, rolled back if it throws. Inside an open
 * transaction (an action's state and its record commit together) it joins it.
 */
export function transaction<T>(db: DatabaseSync, body: () => T): T {
  if (db.isTransaction) return body();
  db.exec("BEGIN IMMEDIATE");
  try {
    const result = body();
    db.exec("COMMIT");
    return result;
  } catch (err) {
    if (db.isTransaction) db.exec("ROLLBACK");
    throw err;
  }
}
