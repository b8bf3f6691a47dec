// Keeps each partition's fleet state in Blob Storage as a snapshot plus a chain of journals of what each batch changed,
// so a batch writes in proportion to what it changed and a new snapshot is written beside the batches, not in their
// way; every write is ETag-guarded, so a holder that lost the partition never overwrites its new owner.
import { randomUUID } from "node:crypto";
import type { ContainerClient } from "@azure/storage-blob";
import {
  applyChanges,
  emptyPartitionState,
  OwnershipLostError,
  ownPartitionState,
  type LoadedPartitionState,
  type PartitionState,
  type PartitionStateStore,
  type StateChanges,
} from "./partition-state.js";

/** A journal is continued by a new one (and a new snapshot written) once it would grow past the snapshot's size, and at least this. */
export const minJournalBytes = 64 * 1024;
/** Blocks one journal takes before it is continued by a new one (an append blob holds at most 50,000). */
export const maxJournalBlocks = 10_000;
/** An entry larger than this is written as a snapshot instead (an append block holds at most 4 MiB). */
const maxEntryBytes = 4_000_000;
/** Loads retried when a journal of the chain was deleted between the reads (a new snapshot no longer names it). */
const maxLoadAttempts = 3;
/**
 * Journals a snapshot may lag behind its partition's newest one (its background writes failing) before a save writes
 * the snapshot itself, in the batch's way: a load never follows a long chain.
 */
export const maxJournalsBehind = 4;
/** Journals a load follows from the snapshot: more is a broken (cyclic) chain, not a state. */
const maxChainLength = 64;

/** The snapshot blob: the state as of its journal's start, and the journal (an append blob) that continues it. */
interface Snapshot extends PartitionState {
  readonly journal?: string;
}

/**
 * A journal line: what one batch changed, or the seal that closed the journal, naming the journal that continues it
 * (a seal without `next` was left by a snapshot write that did not finish: the next save writes a snapshot).
 */
type JournalEntry = StateChanges | { readonly sealed: true; readonly next?: string };

/** What a holder read or wrote last: the opaque version string a processor hands back to `save`. */
interface Version {
  /** ETag of the snapshot blob (absent: none written yet). */
  readonly snapshot?: string;
  readonly snapshotBytes: number;
  /** The journal saves append to: its blob name and ETag (absent: the snapshot names none). */
  readonly journal?: { readonly name: string; readonly etag: string; readonly bytes: number; readonly blocks: number };
  /**
   * The sealed journals between the snapshot and `journal`, oldest first (the first is the one the snapshot names):
   * deleted once a snapshot names a later one.
   */
  readonly behind: readonly string[];
  /** `journal` was sealed with no successor (a snapshot write that did not finish): the next save writes a snapshot. */
  readonly sealed: boolean;
}

/** A snapshot written in the background: which journal it names, and its ETag and size. */
interface LandedSnapshot {
  readonly journal: string;
  readonly etag: string;
  readonly bytes: number;
}

const statusOf = (err: unknown): number | undefined => (err as { statusCode?: number }).statusCode;

const sealLine = (next: string | undefined): string => `${JSON.stringify({ sealed: true, next })}\n`;

/**
 * Snapshot `<prefix>/<partitionId>.json` (a block blob) naming the journal that continues it,
 * `<prefix>/<partitionId>.journal-<uuid>` (an append blob of JSON lines, one per batch). A save appends one line
 * against the journal's ETag. Once the journal outgrows the snapshot, a save creates a new journal under a fresh name
 * and appends its line and a seal naming the new journal to the old one (one guarded append: the chain is whole at
 * every moment), and the snapshot of the state as of the new journal's start is written in the background against the
 * snapshot's ETag; once it is, the journals before the one it names are deleted. Saves go on meanwhile. A journal is
 * created only under a new name, so no stale holder can recreate one: it finds it sealed or gone and gets
 * OwnershipLostError.
 */
export class BlobPartitionStateStore implements PartitionStateStore {
  /** Background snapshot writes in flight, per partition: one at a time (saves append meanwhile). */
  private readonly writing = new Map<string, Promise<void>>();
  /** The last snapshot a background write put in place, per partition. */
  private readonly landed = new Map<string, LandedSnapshot>();

  constructor(
    private readonly container: ContainerClient,
    private readonly prefix: string,
    private readonly timeoutMs: number,
  ) {}

  private snapshotName(partitionId: string): string {
    return `${this.prefix}/${partitionId}.json`;
  }

  async load(partitionId: string): Promise<LoadedPartitionState> {
    for (let attempt = 1; ; attempt++) {
      const loaded = await this.loadOnce(partitionId);
      if (loaded !== undefined) return loaded;
      if (attempt >= maxLoadAttempts)
        throw new Error(`partition ${partitionId}: its fleet state journal kept moving while being read`);
    }
  }

  /** The snapshot and its chain of journals; undefined when a journal was deleted between the reads. */
  private async loadOnce(partitionId: string): Promise<LoadedPartitionState | undefined> {
    const snapshot = await this.download(this.snapshotName(partitionId));
    if (snapshot === undefined) return { state: emptyPartitionState(), etag: undefined };
    const read = JSON.parse(snapshot.body) as Snapshot;
    const state = ownPartitionState(read);
    let version: Version = { snapshot: snapshot.etag, snapshotBytes: snapshot.bytes, behind: [], sealed: false };
    for (let name = read.journal, followed = 0; name !== undefined; followed++) {
      if (followed >= maxChainLength)
        throw new Error(`partition ${partitionId}: its fleet state journals chain past ${maxChainLength}`);
      const journal = await this.download(name);
      if (journal === undefined) return undefined;
      const lines = journal.body.split("\n").filter((line) => line !== "");
      let seal: { next?: string } | undefined;
      for (const line of lines) {
        const entry = JSON.parse(line) as JournalEntry;
        if ("sealed" in entry) seal = entry;
        else applyChanges(state, entry);
      }
      version = {
        ...version,
        behind: version.journal === undefined ? [] : [...version.behind, version.journal.name],
        journal: { name, etag: journal.etag, bytes: journal.bytes, blocks: lines.length },
        sealed: seal !== undefined && seal.next === undefined,
      };
      name = seal?.next;
    }
    return { state, etag: encode(version) };
  }

  async save(
    partitionId: string,
    state: PartitionState,
    etag: string | undefined,
    changes?: StateChanges,
  ): Promise<string | undefined> {
    const version = this.withLanded(partitionId, decode(etag));
    const { journal } = version;
    if (changes !== undefined && journal !== undefined && !version.sealed) {
      const line = `${JSON.stringify(changes)}\n`;
      const bytes = Buffer.byteLength(line);
      if (bytes <= maxEntryBytes && journal.blocks < maxJournalBlocks) {
        const outgrown = journal.bytes + bytes > Math.max(minJournalBytes, version.snapshotBytes);
        if (!outgrown || this.writing.has(partitionId)) return encode(await this.appendTo(partitionId, version, line));
        if (version.behind.length < maxJournalsBehind)
          return encode(await this.continueJournal(partitionId, state, version, line));
      }
    }
    return encode(await this.compact(partitionId, state, version));
  }

  /** Resolves once the snapshots being written in the background are written (or given up), or after `timeoutMs`. */
  async settled(timeoutMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(this.writing.values()),
      new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs))),
    ]);
    clearTimeout(timer);
  }

  /** `version` as of the snapshot a background write put in place since, when that snapshot names one of its journals. */
  private withLanded(partitionId: string, version: Version): Version {
    const landed = this.landed.get(partitionId);
    if (landed === undefined || version.journal === undefined) return version;
    const chain = [...version.behind, version.journal.name];
    const at = chain.indexOf(landed.journal);
    if (at <= 0) return version; // not in the chain, or already the snapshot's
    return { ...version, snapshot: landed.etag, snapshotBytes: landed.bytes, behind: version.behind.slice(at) };
  }

  private async appendTo(partitionId: string, version: Version, line: string): Promise<Version> {
    const journal = version.journal!;
    const etag = await this.append(partitionId, journal.name, line, journal.etag);
    const bytes = journal.bytes + Buffer.byteLength(line);
    return { ...version, journal: { ...journal, etag, bytes, blocks: journal.blocks + 1 } };
  }

  /**
   * Appends `line` and a seal naming a new journal to the current one in one guarded append, then writes the snapshot
   * of `state` (as of the new journal's start) in the background: the save does not wait for it.
   */
  private async continueJournal(
    partitionId: string,
    state: PartitionState,
    version: Version,
    line: string,
  ): Promise<Version> {
    const old = version.journal!;
    const next = await this.createJournal(partitionId);
    try {
      await this.append(partitionId, old.name, `${line}${sealLine(next.name)}`, old.etag);
    } catch (err) {
      await this.deleteIfUnnamed(next.name, err);
      throw err;
    }
    const continued: Version = { ...version, journal: next, behind: [...version.behind, old.name] };
    const written = this.writeSnapshotLater(partitionId, state, next.name, version.snapshot)
      .then(async (landed) => {
        this.landed.set(partitionId, landed);
        await this.deleteJournals(continued.behind);
      })
      // Not written (a conflict, a timeout): the older snapshot and the chain from it still hold the whole state, and the
      // next journal continued writes one again (or, `maxJournalsBehind` later, a save writes it itself).
      .catch(() => undefined)
      .finally(() => this.writing.delete(partitionId));
    this.writing.set(partitionId, written);
    return continued;
  }

  /** Writes the snapshot once the save that asked for it has returned: the text too is made beside the batches. */
  private async writeSnapshotLater(
    partitionId: string,
    state: PartitionState,
    journal: string,
    snapshotEtag: string | undefined,
  ): Promise<LandedSnapshot> {
    await new Promise((resolve) => setImmediate(resolve));
    const body = snapshotBody(state, journal);
    const etag = await this.writeSnapshot(partitionId, body, snapshotEtag);
    return { journal, etag, bytes: Buffer.byteLength(body) };
  }

  /**
   * Writes `state` as the snapshot, naming a new journal, and waits for it: the first save, one after an unfinished
   * snapshot write, one too large for a journal entry, or one whose snapshot fell `maxJournalsBehind` journals behind.
   */
  private async compact(partitionId: string, state: PartitionState, version: Version): Promise<Version> {
    const old = version.journal;
    const next = await this.createJournal(partitionId);
    const sealing = old !== undefined && !version.sealed;
    if (sealing) {
      try {
        await this.append(partitionId, old.name, sealLine(next.name), old.etag);
      } catch (err) {
        await this.deleteIfUnnamed(next.name, err);
        throw err;
      }
    }
    const body = snapshotBody(state, next.name);
    let written: string;
    try {
      written = await this.writeSnapshot(partitionId, body, version.snapshot);
    } catch (err) {
      if (!sealing) await this.deleteIfUnnamed(next.name, err); // a sealed journal names it: the chain goes through it
      throw err;
    }
    await this.deleteJournals([...version.behind, ...(old === undefined ? [] : [old.name])]);
    return { snapshot: written, snapshotBytes: Buffer.byteLength(body), journal: next, behind: [], sealed: false };
  }

  /** A new, empty journal under a fresh name. */
  private async createJournal(partitionId: string): Promise<NonNullable<Version["journal"]>> {
    const name = `${this.prefix}/${partitionId}.journal-${randomUUID()}`;
    const created = await this.container.getAppendBlobClient(name).create({
      conditions: { ifNoneMatch: "*" },
      abortSignal: AbortSignal.timeout(this.timeoutMs),
    });
    return { name, etag: created.etag!, bytes: 0, blocks: 0 };
  }

  /** Writes the snapshot blob against the ETag it had (none: it must not exist); returns the new ETag. */
  private async writeSnapshot(partitionId: string, body: string, snapshotEtag: string | undefined): Promise<string> {
    try {
      const res = await this.container
        .getBlockBlobClient(this.snapshotName(partitionId))
        .upload(body, Buffer.byteLength(body), {
          conditions: snapshotEtag === undefined ? { ifNoneMatch: "*" } : { ifMatch: snapshotEtag },
          blobHTTPHeaders: { blobContentType: "application/json" },
          abortSignal: AbortSignal.timeout(this.timeoutMs),
        });
      return res.etag!;
    } catch (err) {
      throw this.conflictOr(err, partitionId);
    }
  }

  /** Deletes journals no snapshot names any more (one left behind is harmless: nothing reads it). */
  private async deleteJournals(names: readonly string[]): Promise<void> {
    await Promise.all(names.map((name) => this.deleteQuietly(name)));
  }

  /**
   * Deletes a new journal after the write that was to name it failed — only when that write certainly did not happen
   * (the store refused it: another holder's write). A timeout or a server error may have come after the write took
   * effect, and a journal a seal or a snapshot names must exist: an orphan is harmless, a missing link is not.
   */
  private async deleteIfUnnamed(name: string, err: unknown): Promise<void> {
    if (err instanceof OwnershipLostError) await this.deleteQuietly(name);
  }

  private async deleteQuietly(name: string): Promise<void> {
    await this.container
      .getAppendBlobClient(name)
      .deleteIfExists({ abortSignal: AbortSignal.timeout(this.timeoutMs) })
      .catch(() => undefined);
  }

  private async append(partitionId: string, name: string, line: string, etag: string): Promise<string> {
    try {
      const res = await this.container.getAppendBlobClient(name).appendBlock(line, Buffer.byteLength(line), {
        conditions: { ifMatch: etag },
        abortSignal: AbortSignal.timeout(this.timeoutMs),
      });
      return res.etag!;
    } catch (err) {
      // 404: the journal was compacted away by the partition's new owner.
      throw this.conflictOr(err, partitionId, 404);
    }
  }

  private conflictOr(err: unknown, partitionId: string, ...more: number[]): unknown {
    const status = statusOf(err);
    if (status === 412 || status === 409 || (status !== undefined && more.includes(status)))
      return new OwnershipLostError(`partition ${partitionId}: its fleet state was written by another instance`);
    return err;
  }

  /** Body, ETag and size from one response, so they belong to the same version; undefined when there is no blob. */
  private async download(name: string): Promise<{ body: string; etag: string; bytes: number } | undefined> {
    try {
      const res = await this.container
        .getBlobClient(name)
        .download(0, undefined, { abortSignal: AbortSignal.timeout(this.timeoutMs) });
      const chunks: Buffer[] = [];
      for await (const chunk of res.readableStreamBody as AsyncIterable<Buffer>) chunks.push(chunk);
      const body = Buffer.concat(chunks);
      return { body: body.toString("utf8"), etag: res.etag!, bytes: body.length };
    } catch (err) {
      if (statusOf(err) === 404) return undefined;
      throw err;
    }
  }
}

/** The same version always reads as the same string (fields in one order), whether it was loaded or written. */
function encode(version: Version): string {
  const { journal } = version;
  return JSON.stringify({
    snapshot: version.snapshot,
    snapshotBytes: version.snapshotBytes,
    journal: journal && { name: journal.name, etag: journal.etag, bytes: journal.bytes, blocks: journal.blocks },
    behind: version.behind,
    sealed: version.sealed,
  });
}

function decode(etag: string | undefined): Version {
  return etag === undefined ? { snapshotBytes: 0, behind: [], sealed: false } : (JSON.parse(etag) as Version);
}

/** The snapshot blob's text: `state`, continued by `journal`. */
function snapshotBody(state: PartitionState, journal: string): string {
  return JSON.stringify({ ...state, journal } satisfies Snapshot);
}
