// Keeps each partition's fleet state in Blob Storage as a snapshot plus a journal of what each batch changed, so a
// batch writes in proportion to what it changed; every write is ETag-guarded, so a holder that lost the partition never
// overwrites its new owner.
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

/** The journal is folded into a new snapshot once it would grow past the snapshot's size, and at least this. */
export const minJournalBytes = 64 * 1024;
/** Blocks one journal takes before it is compacted (an append blob holds at most 50,000). */
export const maxJournalBlocks = 10_000;
/** An entry larger than this is written as a snapshot instead (an append block holds at most 4 MiB). */
const maxEntryBytes = 4_000_000;
/** Loads retried when the journal a snapshot names was compacted away between the two reads. */
const maxLoadAttempts = 3;

/** The snapshot blob: the state as of its journal's start, and the journal (an append blob) that continues it. */
interface Snapshot extends PartitionState {
  readonly journal?: string;
}

/** A journal line: what one batch changed, or the mark that the journal was closed for compaction. */
type JournalEntry = StateChanges | { readonly sealed: true };

/** What a holder read or wrote last: the opaque version string a processor hands back to `save`. */
interface Version {
  /** ETag of the snapshot blob (absent: none written yet). */
  readonly snapshot?: string;
  readonly snapshotBytes: number;
  /** The journal's blob name and ETag (absent: the snapshot names none). */
  readonly journal?: { readonly name: string; readonly etag: string; readonly bytes: number; readonly blocks: number };
  /** The journal was closed by a compaction that did not finish: the next save must write a snapshot. */
  readonly sealed: boolean;
}

const statusOf = (err: unknown): number | undefined => (err as { statusCode?: number }).statusCode;

/**
 * Snapshot `<prefix>/<partitionId>.json` (a block blob) naming its journal `<prefix>/<partitionId>.journal-<uuid>`
 * (an append blob of JSON lines, one per batch). A save appends one line against the journal's ETag; once the journal
 * outgrows the snapshot, a save seals it (one more guarded append), starts a new journal under a fresh name and writes
 * the whole state as the new snapshot against the snapshot's ETag, then deletes the old journal. A journal is created
 * only under a new name, so no stale holder can recreate one: it finds it sealed or gone and gets OwnershipLostError.
 */
export class BlobPartitionStateStore implements PartitionStateStore {
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

  /** The snapshot and its journal; undefined when the journal was compacted away between the two reads. */
  private async loadOnce(partitionId: string): Promise<LoadedPartitionState | undefined> {
    const snapshot = await this.download(this.snapshotName(partitionId));
    if (snapshot === undefined) return { state: emptyPartitionState(), etag: undefined };
    const read = JSON.parse(snapshot.body) as Snapshot;
    const state = ownPartitionState(read);
    const base = { snapshot: snapshot.etag, snapshotBytes: snapshot.bytes, sealed: false };
    if (read.journal === undefined) return { state, etag: encode(base) };
    const journal = await this.download(read.journal);
    if (journal === undefined) return undefined;
    const lines = journal.body.split("\n").filter((line) => line !== "");
    let sealed = false;
    for (const line of lines) {
      const entry = JSON.parse(line) as JournalEntry;
      if ("sealed" in entry) sealed = true;
      else applyChanges(state, entry);
    }
    const version: Version = {
      ...base,
      journal: { name: read.journal, etag: journal.etag, bytes: journal.bytes, blocks: lines.length },
      sealed,
    };
    return { state, etag: encode(version) };
  }

  async save(
    partitionId: string,
    state: PartitionState,
    etag: string | undefined,
    changes?: StateChanges,
  ): Promise<string | undefined> {
    const version = decode(etag);
    if (changes !== undefined && version.journal !== undefined && !version.sealed) {
      const line = `${JSON.stringify(changes)}\n`;
      const bytes = Buffer.byteLength(line);
      const { journal } = version;
      const roomy =
        journal.bytes + bytes <= Math.max(minJournalBytes, version.snapshotBytes) &&
        journal.blocks < maxJournalBlocks &&
        bytes <= maxEntryBytes;
      if (roomy) {
        const appended = await this.append(partitionId, journal.name, line, journal.etag);
        return encode({
          ...version,
          journal: { ...journal, etag: appended, bytes: journal.bytes + bytes, blocks: journal.blocks + 1 },
        });
      }
    }
    return encode(await this.compact(partitionId, state, version));
  }

  /** Seals the current journal, starts a new one and writes `state` as the snapshot that names it. */
  private async compact(partitionId: string, state: PartitionState, version: Version): Promise<Version> {
    const old = version.journal;
    if (old !== undefined && !version.sealed)
      await this.append(partitionId, old.name, `${JSON.stringify({ sealed: true })}\n`, old.etag);
    const journalName = `${this.prefix}/${partitionId}.journal-${randomUUID()}`;
    const journal = this.container.getAppendBlobClient(journalName);
    const created = await journal.create({
      conditions: { ifNoneMatch: "*" },
      abortSignal: AbortSignal.timeout(this.timeoutMs),
    });
    const body = JSON.stringify({ ...state, journal: journalName } satisfies Snapshot);
    const snapshotBytes = Buffer.byteLength(body);
    let written: string | undefined;
    try {
      const res = await this.container.getBlockBlobClient(this.snapshotName(partitionId)).upload(body, snapshotBytes, {
        conditions: version.snapshot === undefined ? { ifNoneMatch: "*" } : { ifMatch: version.snapshot },
        blobHTTPHeaders: { blobContentType: "application/json" },
        abortSignal: AbortSignal.timeout(this.timeoutMs),
      });
      written = res.etag;
    } catch (err) {
      await journal.deleteIfExists({ abortSignal: AbortSignal.timeout(this.timeoutMs) }).catch(() => undefined);
      throw this.conflictOr(err, partitionId);
    }
    if (old !== undefined)
      await this.container
        .getAppendBlobClient(old.name)
        .deleteIfExists({ abortSignal: AbortSignal.timeout(this.timeoutMs) })
        .catch(() => undefined); // an orphan journal is harmless: no snapshot names it
    return {
      snapshot: written,
      snapshotBytes,
      journal: { name: journalName, etag: created.etag!, bytes: 0, blocks: 0 },
      sealed: false,
    };
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
    sealed: version.sealed,
  });
}

function decode(etag: string | undefined): Version {
  return etag === undefined ? { snapshotBytes: 0, sealed: false } : (JSON.parse(etag) as Version);
}
