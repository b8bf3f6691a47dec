// The collector's persisted state (tables `events`, `emitted` and the `collector` meta row): loads it, and writes a
// document's new state as a change against what the database already holds. Emitted keys are kept at least 7 days,
// so a change writes only the keys inserted, updated or pruned since the last write: its cost follows the change,
// not the history. The events of the current document are few and all move together (lastSeenMs): rewritten whole.
import type { DatabaseSync } from "node:sqlite";
import type { CollectorState, EmittedKey, TrackedEvent } from "../collector/state.js";
import { emptyCollectorState } from "../collector/state.js";
import { query } from "./sql.js";

/** What a write changes in table `emitted`. */
export interface EmittedDelta {
  readonly upserts: ReadonlyArray<readonly [string, EmittedKey]>;
  readonly deletes: readonly string[];
}

/** The keys of `next` that are new or differ from `previous`, and the keys of `previous` that `next` no longer has (pure). */
export function diffEmitted(previous: ReadonlyMap<string, EmittedKey>, next: ReadonlyMap<string, EmittedKey>): EmittedDelta {
  const upserts: Array<readonly [string, EmittedKey]> = [];
  const deletes: string[] = [];
  for (const [key, entry] of next) {
    const before = previous.get(key);
    if (before === entry) continue; // the collector keeps an unchanged key's entry object
    if (before === undefined || before.emittedMs !== entry.emittedMs || before.endedMs !== entry.endedMs) upserts.push([key, entry]);
  }
  if (previous.size + upserts.length > next.size) {
    for (const key of previous.keys()) if (!next.has(key)) deletes.push(key);
  }
  return { upserts, deletes };
}

interface CollectorMeta {
  lastIncarnation: number | null;
  lastDocumentHash: string | null;
  lastSuccessMs: number | null;
}

export class CollectorStateTables {
  private readonly s;
  /** The emitted keys as the database holds them (undefined: not known, read on the next write). */
  private persisted: Map<string, EmittedKey> | undefined;

  constructor(private readonly db: DatabaseSync) {
    this.s = {
      getMeta: query<[], { value: string }>(db, "SELECT value FROM meta WHERE key = 'collector'"),
      setMeta: query<[string], never>(db, "INSERT INTO meta(key, value) VALUES ('collector', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value"),
      allEvents: query<[], { event_key: string; status: string; fields: string; last_seen_ms: number }>(db, "SELECT * FROM events"),
      deleteEvents: query<[], never>(db, "DELETE FROM events"),
      insertEvent: query<[string, string, string, number], never>(db, "INSERT INTO events(event_key, status, fields, last_seen_ms) VALUES (?, ?, ?, ?)"),
      allEmitted: query<[], { key: string; emitted_ms: number; ended_ms: number | null }>(db, "SELECT * FROM emitted"),
      upsertEmitted: query<[string, number, number | null], never>(
        db,
        "INSERT INTO emitted(key, emitted_ms, ended_ms) VALUES (?, ?, ?) ON CONFLICT(key) DO UPDATE SET emitted_ms = excluded.emitted_ms, ended_ms = excluded.ended_ms",
      ),
      deleteEmitted: query<[string], never>(db, "DELETE FROM emitted WHERE key = ?"),
    };
  }

  load(): CollectorState {
    const state = emptyCollectorState();
    const meta = this.s.getMeta.get();
    if (meta) Object.assign(state, JSON.parse(meta.value) as CollectorMeta);
    for (const row of this.s.allEvents.all()) {
      state.events.set(row.event_key, { status: row.status as TrackedEvent["status"], fields: JSON.parse(row.fields), lastSeenMs: row.last_seen_ms });
    }
    for (const row of this.s.allEmitted.all()) state.emitted.set(row.key, { emittedMs: row.emitted_ms, endedMs: row.ended_ms });
    this.persisted = new Map(state.emitted);
    return state;
  }

  /**
   * Writes `state`; call inside the document's transaction. Returns the function to call once that transaction has
   * committed (the remembered copy follows the database only then; after a rollback it still matches it).
   */
  write(state: CollectorState): () => void {
    const meta: CollectorMeta = { lastIncarnation: state.lastIncarnation, lastDocumentHash: state.lastDocumentHash, lastSuccessMs: state.lastSuccessMs };
    this.s.setMeta.run(JSON.stringify(meta));
    this.s.deleteEvents.run();
    for (const [key, e] of state.events) this.s.insertEvent.run(key, e.status, JSON.stringify(e.fields), e.lastSeenMs);
    const persisted = this.persisted ?? this.readEmitted();
    const delta = diffEmitted(persisted, state.emitted);
    for (const [key, e] of delta.upserts) this.s.upsertEmitted.run(key, e.emittedMs, e.endedMs);
    for (const key of delta.deletes) this.s.deleteEmitted.run(key);
    return () => {
      // The same entry objects as the state's (the collector never changes one in place: it makes a new one).
      for (const [key, e] of delta.upserts) persisted.set(key, e);
      for (const key of delta.deletes) persisted.delete(key);
      this.persisted = persisted;
    };
  }

  /** Forgets the remembered copy (a write inside a transaction that may still roll back): the table is read again next time. */
  forget(): void {
    this.persisted = undefined;
  }

  private readEmitted(): Map<string, EmittedKey> {
    const out = new Map<string, EmittedKey>();
    for (const row of this.s.allEmitted.all()) out.set(row.key, { emittedMs: row.emitted_ms, endedMs: row.ended_ms });
    return out;
  }
}
