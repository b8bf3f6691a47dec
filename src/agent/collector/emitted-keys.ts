// The emitted keys (the at-most-once guard, kept at least 7 days): one shared map with an expiry-ordered heap, and
// cheap views over it. A document's new keys live in its view's small overlay; `settle` moves them into the map once
// the store has committed them, so neither a change nor pruning costs anything proportional to the keys kept.
import type { EmittedKey } from "./state.js";

/** The one map a chain of views shares; `version` moves only when a view settles into it. */
class SharedKeys {
  readonly map = new Map<string, EmittedKey>();
  readonly byEnd = new ExpiryHeap();
  version = 0;
  /** The view that settled last (the store checks it before trusting that its table matches `version`). */
  settledBy: EmittedKeys | null = null;

  set(key: string, entry: EmittedKey): void {
    const before = this.map.get(key);
    this.map.set(key, entry);
    if (entry.endedMs !== null && entry.endedMs !== before?.endedMs) this.byEnd.push(entry.endedMs, key);
  }

  /** Drops heap entries no longer true (key deleted or ended again later) from the top; rebuilds when they pile up. */
  tidy(): void {
    const live = (endedMs: number, key: string): boolean => this.map.get(key)?.endedMs === endedMs;
    while (this.byEnd.size > 0 && !live(this.byEnd.topEnd(), this.byEnd.topKey())) this.byEnd.pop();
    if (this.byEnd.size > 2 * this.map.size + 64) {
      this.byEnd.clear();
      for (const [key, entry] of this.map) if (entry.endedMs !== null) this.byEnd.push(entry.endedMs, key);
    }
  }
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
    private readonly deletes: Set<string>,
  ) {}

  static from(entries: Iterable<readonly [string, EmittedKey]> = []): EmittedKeys {
    const shared = new SharedKeys();
    for (const [key, entry] of entries) shared.set(key, entry);
    return new EmittedKeys(shared, 0, new Map(), new Set());
  }

  /** A new view with this one's keys, to be changed by the next document (costs this view's overlay, not the map). */
  derive(): EmittedKeys {
    this.check();
    return new EmittedKeys(this.shared, this.baseVersion, new Map(this.upserts), new Set(this.deletes));
  }

  get(key: string): EmittedKey | undefined {
    this.check();
    if (this.deletes.has(key)) return undefined;
    return this.upserts.get(key) ?? this.shared.map.get(key);
  }

  has(key: string): boolean {
    return this.get(key) !== undefined;
  }

  get size(): number {
    this.check();
    let added = 0;
    for (const key of this.upserts.keys()) if (!this.shared.map.has(key)) added += 1;
    return this.shared.map.size + added - this.deletes.size;
  }

  set(key: string, entry: EmittedKey): this {
    this.check();
    this.deletes.delete(key);
    this.upserts.set(key, entry);
    return this;
  }

  delete(key: string): void {
    this.check();
    this.upserts.delete(key);
    if (this.shared.map.has(key)) this.deletes.add(key);
  }

  *[Symbol.iterator](): IterableIterator<[string, EmittedKey]> {
    this.check();
    for (const [key, entry] of this.shared.map) {
      if (!this.deletes.has(key)) yield [key, this.upserts.get(key) ?? entry];
    }
    for (const [key, entry] of this.upserts) if (!this.shared.map.has(key)) yield [key, entry];
  }

  /** Keys whose event ended before `beforeMs`: O(those keys), the heap is walked only below `beforeMs`. */
  endedBefore(beforeMs: number): string[] {
    this.check();
    const found = new Set<string>();
    this.shared.byEnd.visitBelow(beforeMs, (endedMs, key) => {
      if (this.shared.map.get(key)?.endedMs !== endedMs) return; // an entry the heap has not dropped yet
      const seenEndMs = this.get(key)?.endedMs;
      if (seenEndMs !== undefined && seenEndMs !== null && seenEndMs < beforeMs) found.add(key);
    });
    for (const [key, entry] of this.upserts) if (entry.endedMs !== null && entry.endedMs < beforeMs) found.add(key);
    return [...found];
  }

  /** What this view changes against the shared map at its base version (what the store must write). */
  get change(): { readonly upserts: ReadonlyMap<string, EmittedKey>; readonly deletes: ReadonlySet<string> } {
    return { upserts: this.upserts, deletes: this.deletes };
  }

  /** Identifies the map contents this view is based on: the store writes only `change` when its table holds them. */
  get base(): { readonly shared: object; readonly version: number; readonly settledBy: object | null } {
    this.check();
    return { shared: this.shared, version: this.baseVersion, settledBy: this.shared.settledBy };
  }

  /**
   * Moves this view's overlay into the shared map (call once the store has committed this state). Every other view on
   * the old version becomes stale. Costs the overlay.
   */
  settle(): void {
    this.check();
    for (const key of this.deletes) this.shared.map.delete(key);
    for (const [key, entry] of this.upserts) this.shared.set(key, entry);
    this.shared.tidy();
    this.upserts.clear();
    this.deletes.clear();
    this.shared.version += 1;
    this.shared.settledBy = this;
    this.baseVersion = this.shared.version;
  }

  /** The version the shared map will have once this view settles (the store remembers it after a commit). */
  get settledVersion(): number {
    return this.baseVersion + 1;
  }

  private check(): void {
    if (this.baseVersion !== this.shared.version) throw new Error("emitted keys read from a state older than the one adopted since");
  }
}

/** A binary min-heap of (endedMs, key), parallel arrays. */
class ExpiryHeap {
  private readonly ends: number[] = [];
  private readonly keys: string[] = [];

  get size(): number {
    return this.ends.length;
  }

  topEnd(): number {
    return this.ends[0]!;
  }

  topKey(): string {
    return this.keys[0]!;
  }

  clear(): void {
    this.ends.length = 0;
    this.keys.length = 0;
  }

  push(endedMs: number, key: string): void {
    let i = this.ends.length;
    this.ends.push(endedMs);
    this.keys.push(key);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (this.ends[parent]! <= endedMs) break;
      this.move(parent, i);
      i = parent;
    }
    this.ends[i] = endedMs;
    this.keys[i] = key;
  }

  pop(): void {
    const lastEnd = this.ends.pop()!;
    const lastKey = this.keys.pop()!;
    const n = this.ends.length;
    if (n === 0) return;
    let i = 0;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= n) break;
      if (child + 1 < n && this.ends[child + 1]! < this.ends[child]!) child += 1;
      if (this.ends[child]! >= lastEnd) break;
      this.move(child, i);
      i = child;
    }
    this.ends[i] = lastEnd;
    this.keys[i] = lastKey;
  }

  /** Calls `visit` for every entry below `beforeMs` (a subtree whose root is not below it holds none). */
  visitBelow(beforeMs: number, visit: (endedMs: number, key: string) => void): void {
    const stack = this.ends.length > 0 ? [0] : [];
    while (stack.length > 0) {
      const i = stack.pop()!;
      if (i >= this.ends.length || this.ends[i]! >= beforeMs) continue;
      visit(this.ends[i]!, this.keys[i]!);
      stack.push(2 * i + 1, 2 * i + 2);
    }
  }

  private move(from: number, to: number): void {
    this.ends[to] = this.ends[from]!;
    this.keys[to] = this.keys[from]!;
  }
}
