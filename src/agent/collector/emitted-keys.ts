// The emitted keys the collector holds in memory (the at-most-once guard): one map shared by a chain of views. The
// store's table `emitted` holds every key for its retention (at least 7 days); memory holds only what the next document
// can need: the keys of the events the collector tracks, plus those the collect stage recalls from the table for an
// EventId that is back (`remember`). A document's changes live in its view's small overlay; `settle` moves them into
// the map once the store has committed them, and `keepOnlyEvents` then forgets the keys of events no longer tracked.
// So memory, a change and its write all follow the events in the document, not the history.
import { InternalError } from "@sef/errors/sef-error.js";

/** When a key's transition was emitted, and when its event ended (null while it is still in the document). */
export interface EmittedKey {
  emittedMs: number;
  endedMs: number | null;
}

/** The one map a chain of views shares; `version` moves only when a view settles into it. */
class SharedKeys {
  readonly map = new Map<string, EmittedKey>();
  version = 0;
  /** The view that settled last (the store checks it before trusting that its table agrees with `version`). */
  settledBy: EmittedKeys | null = null;
}

/** What a view changes against the shared map at its base version (what the store must write). */
export interface EmittedChange {
  readonly upserts: ReadonlyMap<string, EmittedKey>;
  /** Every key whose event ended before this is forgotten (null: none expired). */
  readonly expiredBefore: number | null;
}

/** The lower-cased EventId of an emitted key (`${EventId}|${status}`; statuses hold no `|`). */
export function eventIdOfKey(key: string): string {
  return key.slice(0, key.lastIndexOf("|"));
}

/**
 * The emitted keys as one state sees them: the shared map at `baseVersion` plus this state's own upserts and deletes.
 * A view whose base has moved on (another view settled) is stale and throws when read.
 */
export class EmittedKeys implements Iterable<[string, EmittedKey]> {
  private constructor(
    private readonly shared: SharedKeys,
    private baseVersion: number,
    private readonly upserts: Map<string, EmittedKey>,
    /** Keys this view expired (the shared map may hold them or not). */
    private readonly deletes: Set<string>,
    private expiredBefore: number | null,
  ) {}

  static from(entries: Iterable<readonly [string, EmittedKey]> = []): EmittedKeys {
    const shared = new SharedKeys();
    for (const [key, entry] of entries) shared.map.set(key, entry);
    return new EmittedKeys(shared, 0, new Map(), new Set(), null);
  }

  /** A new view with this one's keys, to be changed by the next document (costs this view's overlay, not the map). */
  derive(): EmittedKeys {
    this.check();
    return new EmittedKeys(
      this.shared,
      this.baseVersion,
      new Map(this.upserts),
      new Set(this.deletes),
      this.expiredBefore,
    );
  }

  get(key: string): EmittedKey | undefined {
    this.check();
    if (this.deletes.has(key)) return undefined;
    return this.upserts.get(key) ?? this.shared.map.get(key);
  }

  has(key: string): boolean {
    return this.get(key) !== undefined;
  }

  /** Costs the keys held in memory (few: see keepOnlyEvents). */
  get size(): number {
    let n = 0;
    for (const _ of this) n += 1;
    return n;
  }

  set(key: string, entry: EmittedKey): this {
    this.check();
    this.deletes.delete(key);
    this.upserts.set(key, entry);
    return this;
  }

  *[Symbol.iterator](): IterableIterator<[string, EmittedKey]> {
    this.check();
    for (const [key, entry] of this.shared.map) {
      if (!this.deletes.has(key)) yield [key, this.upserts.get(key) ?? entry];
    }
    for (const [key, entry] of this.upserts) if (!this.shared.map.has(key)) yield [key, entry];
  }

  /**
   * Forgets every key whose event ended before `cutoffMs`: those held here at once (memory is small), and, once the
   * store writes this view, those of the table too. Costs the keys held in memory.
   */
  expireBefore(cutoffMs: number): void {
    const expired: string[] = [];
    for (const [key, entry] of this) if (entry.endedMs !== null && entry.endedMs < cutoffMs) expired.push(key);
    for (const key of expired) {
      this.upserts.delete(key);
      this.deletes.add(key); // also when only the overlay held it: a key remembered later must not bring it back
    }
    this.expiredBefore = Math.max(this.expiredBefore ?? cutoffMs, cutoffMs);
  }

  /** What this view changes against the shared map at its base version (what the store must write). */
  get change(): EmittedChange {
    return { upserts: this.upserts, expiredBefore: this.expiredBefore };
  }

  /** Identifies the map contents this view is based on: the store writes only `change` when its table agrees. */
  get base(): { readonly shared: object; readonly version: number; readonly settledBy: object | null } {
    this.check();
    return { shared: this.shared, version: this.baseVersion, settledBy: this.shared.settledBy };
  }

  /**
   * Adds keys read from the store's table that the shared map lacks (an EventId back after its keys were forgotten
   * here). Writes nothing: the table holds them already, so the store's knowledge of it stays true.
   */
  remember(entries: Iterable<readonly [string, EmittedKey]>): void {
    this.check();
    for (const [key, entry] of entries) if (!this.shared.map.has(key)) this.shared.map.set(key, entry);
  }

  /**
   * Moves this view's overlay into the shared map (call once the store has committed this state). Every other view on
   * the old version becomes stale. Costs the overlay.
   */
  settle(): void {
    this.check();
    for (const key of this.deletes) this.shared.map.delete(key);
    for (const [key, entry] of this.upserts) this.shared.map.set(key, entry);
    this.upserts.clear();
    this.deletes.clear();
    this.expiredBefore = null;
    this.shared.version += 1;
    this.shared.settledBy = this;
    this.baseVersion = this.shared.version;
  }

  /**
   * Forgets from memory the keys of events `tracked` does not hold (lower-cased EventIds), once settled: the table
   * keeps them, and `remember` brings them back if the EventId returns. Costs the keys held in memory.
   */
  keepOnlyEvents(tracked: { has(eventId: string): boolean }): void {
    this.check();
    if (this.upserts.size > 0 || this.deletes.size > 0)
      throw new InternalError("emitted keys forgotten from a view not settled");
    for (const key of this.shared.map.keys()) if (!tracked.has(eventIdOfKey(key))) this.shared.map.delete(key);
  }

  /** The version the shared map will have once this view settles (the store remembers it after a commit). */
  get settledVersion(): number {
    return this.baseVersion + 1;
  }

  private check(): void {
    if (this.baseVersion !== this.shared.version)
      throw new InternalError("emitted keys read from a state older than the one adopted since");
  }
}
