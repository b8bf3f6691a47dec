// The collector's persisted state in the store (tables `events`, `emitted` and the `collector` meta row, made by
// store/migrations.ts): loads it, saves a document's new state as the change the collector made, and reads back the
// emitted keys of an EventId that returns.
// Table `emitted` holds every key for its retention (at least 7 days); the collector holds in memory only the keys of
// the events it tracks (collector/emitted-keys.ts). A change writes the keys the document inserted or updated and
// deletes the expired ones by an index range: its cost follows the change, not the history. When the table may not
// agree with the collector's view (a write into a transaction someone else opened, a state made by hand), every key
// the collector holds is written and the table is swept once. The events of the current document are few and all
// move together (lastSeenMs): rewritten whole.
import type { Store, WriteSettlement } from "../store/store.js";
import { query } from "../store/sql.js";
import type { CollectorState, EmittedKey, TrackedEvent } from "./state.js";
import { emptyCollectorState } from "./state.js";
import { EmittedKeys } from "./emitted-keys.js";
import type { EmittedToRecall } from "./transitions.js";

/** The table agrees with the shared map of these emitted keys at this version (see EmittedKeys.base). */
interface KnownTable {
  readonly shared: object;
  readonly version: number;
  readonly settledBy: object | null;
}

interface CollectorMeta {
  lastIncarnation: number | null;
  lastDocumentHash: string | null;
  lastSuccessMs: number | null;
}

type EmittedRow = { key: string; emitted_ms: number; ended_ms: number | null };

export class CollectorStateTables {
  private readonly s;
  /** What table `emitted` agrees with, as a base of the collector's views (undefined: not known until the next write). */
  private known: KnownTable | undefined;
  /** Times table `emitted` was swept whole (each write whose view the table was not known to agree with). */
  tableSweeps = 0;
  /** What the writes of the open transaction do once it commits (see `save`). */
  private readonly afterCommit: Array<() => void> = [];

  /** The collector state's tables in an open store (one per store: it follows the store's writes). */
  constructor(private readonly store: Store) {
    const db = store.database;
    store.onWriteSettled((settlement) => this.settle(settlement));
    this.s = {
      allEvents: query<[], { event_key: string; status: string; fields: string; last_seen_ms: number }>(
        db,
        "SELECT * FROM events",
      ),
      deleteEvents: query<[], never>(db, "DELETE FROM events"),
      insertEvent: query<[string, string, string, number], never>(
        db,
        "INSERT INTO events(event_key, status, fields, last_seen_ms) VALUES (?, ?, ?, ?)",
      ),
      // `${id}|…` sorts from `${id}|` up to `${id}}` ('}' follows '|'): one range of the primary key.
      emittedOfEvent: query<[string, string], EmittedRow>(
        db,
        "SELECT key, emitted_ms, ended_ms FROM emitted WHERE key >= ? AND key < ?",
      ),
      emittedKey: query<[string], EmittedRow>(db, "SELECT key, emitted_ms, ended_ms FROM emitted WHERE key = ?"),
      upsertEmitted: query<[string, number, number | null], never>(
        db,
        "INSERT INTO emitted(key, emitted_ms, ended_ms) VALUES (?, ?, ?) ON CONFLICT(key) DO UPDATE SET emitted_ms = excluded.emitted_ms, ended_ms = excluded.ended_ms",
      ),
      // Index emitted_by_end: costs the keys deleted, not the keys kept.
      expireEmitted: query<[number], never>(db, "DELETE FROM emitted WHERE ended_ms < ?"),
      // Keys still open whose event is not tracked any more: their end was written by a transaction that rolled back.
      endOrphans: query<[number], never>(
        db,
        "UPDATE emitted SET ended_ms = ? WHERE ended_ms IS NULL AND NOT EXISTS " +
          "(SELECT 1 FROM events WHERE emitted.key >= events.event_key || '|' AND emitted.key < events.event_key || '}')",
      ),
    };
  }

  /** The state saved last; its emitted keys are those of the events it tracks (the rest stay in the table). */
  load(): CollectorState {
    const state = emptyCollectorState();
    const meta = this.store.meta.get<CollectorMeta>("collector");
    if (meta) Object.assign(state, meta);
    for (const row of this.s.allEvents.all()) {
      state.events.set(row.event_key, {
        status: row.status as TrackedEvent["status"],
        fields: JSON.parse(row.fields),
        lastSeenMs: row.last_seen_ms,
      });
    }
    state.emitted = EmittedKeys.from(this.emittedKeysOf({ eventIds: [...state.events.keys()], keys: [] }));
    this.known = state.emitted.base;
    return state;
  }

  /** Every emitted key of these lower-cased EventIds, and these keys, as the table holds them (index lookups). */
  emittedKeysOf({ eventIds, keys }: EmittedToRecall): Array<[string, EmittedKey]> {
    const rows: EmittedRow[] = [];
    for (const id of eventIds) rows.push(...this.s.emittedOfEvent.all(`${id}|`, `${id}}`));
    for (const key of keys) {
      const row = this.s.emittedKey.get(key);
      if (row) rows.push(row);
    }
    return rows.map((row) => [row.key, { emittedMs: row.emitted_ms, endedMs: row.ended_ms }]);
  }

  /**
   * Saves `state` (only the emitted keys its view changed; the collector settles that view once this has committed);
   * inside a caller's transaction (a document's state and its records) it joins it.
   */
  save(state: CollectorState): void {
    this.store.write(() => {
      this.afterCommit.push(this.write(state));
    });
  }

  /**
   * After the store's outermost write: what the table is known to hold follows the writes only when the store's own
   * transaction committed them, and stays as it was when that transaction rolled back whole (whatever failed in it);
   * otherwise (a write inside a transaction opened by someone else, which may still roll back, or a failed write's
   * part kept by a caller that went on to commit) it is forgotten and the table is swept at the next save.
   */
  private settle(settlement: WriteSettlement): void {
    const pending = this.afterCommit.splice(0);
    if (settlement === "committed") for (const apply of pending) apply();
    else if (settlement === "uncertain" || (settlement === "joined" && pending.length > 0)) this.forget();
  }

  /**
   * Writes `state`; call inside the document's transaction. Returns the function to call once that transaction has
   * committed: the table then agrees with what `state.emitted` holds once settled (`EmittedKeys.settle`, the
   * collector's adoption). After a rollback nothing changed, and the table still agrees with what it did.
   */
  private write(state: CollectorState): () => void {
    const meta: CollectorMeta = {
      lastIncarnation: state.lastIncarnation,
      lastDocumentHash: state.lastDocumentHash,
      lastSuccessMs: state.lastSuccessMs,
    };
    this.store.meta.set("collector", meta);
    this.s.deleteEvents.run();
    for (const [key, e] of state.events) this.s.insertEvent.run(key, e.status, JSON.stringify(e.fields), e.lastSeenMs);
    const { upserts, expiredBefore } = state.emitted.change;
    if (expiredBefore !== null) this.s.expireEmitted.run(expiredBefore);
    if (this.agreesWithBaseOf(state.emitted)) {
      for (const [key, e] of upserts) this.s.upsertEmitted.run(key, e.emittedMs, e.endedMs);
    } else {
      this.writeWhole(state);
    }
    const { shared } = state.emitted.base;
    const after: KnownTable = { shared, version: state.emitted.settledVersion, settledBy: state.emitted };
    return () => {
      this.known = after;
    };
  }

  /** Forgets what the table agrees with (a write inside a transaction that may still roll back): swept next time. */
  private forget(): void {
    this.known = undefined;
  }

  /**
   * The table may not agree with the collector's view: every key the view holds is written, and keys left open for
   * events no longer tracked (an end rolled back after the collector forgot the key) are ended now, so they expire.
   */
  private writeWhole(state: CollectorState): void {
    this.tableSweeps += 1;
    for (const [key, e] of state.emitted) this.s.upsertEmitted.run(key, e.emittedMs, e.endedMs);
    this.s.endOrphans.run(state.lastSuccessMs ?? 0);
  }

  /** Whether the table agrees with the shared map `emitted` is a view of (so its overlay is all there is to write). */
  private agreesWithBaseOf(emitted: EmittedKeys): boolean {
    const base = emitted.base;
    const known = this.known;
    return (
      known !== undefined &&
      known.shared === base.shared &&
      known.version === base.version &&
      known.settledBy === base.settledBy
    );
  }
}
