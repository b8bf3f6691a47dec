// The collector's persisted state (tables `events`, `emitted` and the `collector` meta row): loads it, and writes a
// document's new state as the change the collector made. Emitted keys are kept at least 7 days, so a change writes
// only the keys the document inserted, updated or pruned (its view's overlay, collector/emitted-keys.ts): its cost
// follows the change, not the history. When the table may not hold the view's base (first write into a transaction
// someone else opened, a state made by hand), the table is read and diffed once. The events of the current document
// are few and all move together (lastSeenMs): rewritten whole.
import type { DatabaseSync } from "node:sqlite";
import type { CollectorState, EmittedKey, TrackedEvent } from "../collector/state.js";
import { emptyCollectorState } from "../collector/state.js";
import { EmittedKeys } from "../collector/emitted-keys.js";
import { query } from "./sql.js";

/** What a write changes in table `emitted`. */
export interface EmittedDelta {
  readonly upserts: ReadonlyArray<readonly [string, EmittedKey]>;
  readonly deletes: readonly string[];
}

/** The keys of `next` that are new or differ from `previous`, and the keys of `previous` that `next` no longer has (pure). */
export function diffEmitted(previous: ReadonlyMap<string, EmittedKey>, next: Iterable<readonly [string, EmittedKey]>): EmittedDelta {
  const upserts: Array<readonly [string, EmittedKey]> = [];
  const seen = new Set<string>();
  for (const [key, entry] of next) {
    seen.add(key);
    const before = previous.get(key);
    if (before === undefined || before.emittedMs !== entry.emittedMs || before.endedMs !== entry.endedMs) upserts.push([key, entry]);
  }
  const deletes = [...previous.keys()].filter((key) => !seen.has(key));
  return { upserts, deletes };
}

/** The table holds the shared map of these emitted keys at this version (see EmittedKeys.base). */
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

export class CollectorStateTables {
  private readonly s;
  /** What table `emitted` holds, as a base of the collector's views (undefined: not known, read on the next write). */
  private known: KnownTable | undefined;
  /** Times table `emitted` was read whole (the load, and each write whose base the table was not known to hold). */
  tableReads = 0;

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
    state.emitted = EmittedKeys.from(this.readEmitted());
    this.known = state.emitted.base;
    return state;
  }

  /**
   * Writes `state`; call inside the document's transaction. Returns the function to call once that transaction has
   * committed: the table then holds what `state.emitted` holds once settled (`EmittedKeys.settle`, the collector's
   * adoption). After a rollback nothing changed, and the table still holds what it did.
   */
  write(state: CollectorState): () => void {
    const meta: CollectorMeta = { lastIncarnation: state.lastIncarnation, lastDocumentHash: state.lastDocumentHash, lastSuccessMs: state.lastSuccessMs };
    this.s.setMeta.run(JSON.stringify(meta));
    this.s.deleteEvents.run();
    for (const [key, e] of state.events) this.s.insertEvent.run(key, e.status, JSON.stringify(e.fields), e.lastSeenMs);
    const delta = this.holdsBaseOf(state.emitted) ? changeOf(state.emitted) : diffEmitted(this.readEmitted(), state.emitted);
    for (const [key, e] of delta.upserts) this.s.upsertEmitted.run(key, e.emittedMs, e.endedMs);
    for (const key of delta.deletes) this.s.deleteEmitted.run(key);
    const { shared } = state.emitted.base;
    const after: KnownTable = { shared, version: state.emitted.settledVersion, settledBy: state.emitted };
    return () => {
      this.known = after;
    };
  }

  /** Forgets what the table holds (a write inside a transaction that may still roll back): it is read again next time. */
  forget(): void {
    this.known = undefined;
  }

  /** Whether the table holds exactly the shared map `emitted` is a view of (so its overlay is all there is to write). */
  private holdsBaseOf(emitted: EmittedKeys): boolean {
    const base = emitted.base;
    const known = this.known;
    return known !== undefined && known.shared === base.shared && known.version === base.version && known.settledBy === base.settledBy;
  }

  private readEmitted(): Map<string, EmittedKey> {
    this.tableReads += 1;
    const out = new Map<string, EmittedKey>();
    for (const row of this.s.allEmitted.all()) out.set(row.key, { emittedMs: row.emitted_ms, endedMs: row.ended_ms });
    return out;
  }
}

function changeOf(emitted: EmittedKeys): EmittedDelta {
  const { upserts, deletes } = emitted.change;
  return { upserts: [...upserts], deletes: [...deletes] };
}
