// The fleet state of one Event Hubs partition (fleet events and what each target was told) and its home in Blob
// Storage, written with an ETag condition so an instance that lost the partition can never overwrite its new owner.
import type { ContainerClient } from "@azure/storage-blob";
import type { FleetEvent, VmStatus } from "./fleet-event.js";
import type { NotificationState } from "./notification-plan.js";
import { SefError } from "@sef/errors/sef-error.js";
import { dictOf, emptyDict } from "./safe-dict.js";

export interface PartitionState {
  /** Sequence number of the last event folded (-1 before any): events at or below it are never folded again. */
  sequenceNumber: number;
  /** By fleet-event key; every dictionary of the state has no prototype (keys come from records). */
  events: Record<string, FleetEvent>;
  /** Per fleet-event key, per target name. */
  notifications: Record<string, Record<string, NotificationState>>;
}

export function emptyPartitionState(): PartitionState {
  return { sequenceNumber: -1, events: emptyDict(), notifications: emptyDict() };
}

function eventOf(value: unknown): FleetEvent {
  const event = value as FleetEvent;
  return { ...event, resources: [...event.resources], vms: dictOf<VmStatus>(event.vms) };
}

/**
 * A copy of a state, read as JSON or held, whose dictionaries have no prototype: what a fold may change (events, their
 * Resources and VMs, the notification states per event) is copied; VM and notification states are replaced, never
 * changed, so they are shared.
 */
export function ownPartitionState(source: PartitionState): PartitionState {
  return {
    sequenceNumber: source.sequenceNumber,
    events: dictOf(source.events, eventOf),
    notifications: dictOf(source.notifications, (states) => dictOf<NotificationState>(states)),
  };
}

/** Another instance wrote the state since we read it: the partition has moved. */
export class OwnershipLostError extends SefError {
  override readonly name = "OwnershipLostError";
  override readonly code = "SEF_ERR_FLEET_OWNERSHIP_LOST";
}

/** A partition's state as read, with the version (ETag) a save must match: `undefined` when there is no blob yet. */
export interface LoadedPartitionState {
  readonly state: PartitionState;
  readonly etag: string | undefined;
}

/**
 * Each holder of a partition keeps the version it read and saves against it: a holder whose copy is stale can never
 * overwrite a newer state (it gets OwnershipLostError and reads again), even within one process.
 */
export interface PartitionStateStore {
  load(partitionId: string): Promise<LoadedPartitionState>;
  /** Saves `state` if the blob is still at `etag`; returns the new version. */
  save(partitionId: string, state: PartitionState, etag: string | undefined): Promise<string | undefined>;
}

/** Keeps each partition's state as one JSON blob `<prefix>/<partitionId>.json`, ETag-guarded. */
export class BlobPartitionStateStore implements PartitionStateStore {
  constructor(
    private readonly container: ContainerClient,
    private readonly prefix: string,
    private readonly timeoutMs: number,
  ) {}

  private blobName(partitionId: string): string {
    return `${this.prefix}/${partitionId}.json`;
  }

  /** Body and ETag from one response, so they always belong to the same version. */
  async load(partitionId: string): Promise<LoadedPartitionState> {
    const blob = this.container.getBlockBlobClient(this.blobName(partitionId));
    try {
      const res = await blob.download(0, undefined, { abortSignal: AbortSignal.timeout(this.timeoutMs) });
      const chunks: Buffer[] = [];
      for await (const chunk of res.readableStreamBody as AsyncIterable<Buffer>) chunks.push(chunk);
      return { state: JSON.parse(Buffer.concat(chunks).toString("utf8")) as PartitionState, etag: res.etag };
    } catch (err) {
      if ((err as { statusCode?: number }).statusCode === 404) return { state: emptyPartitionState(), etag: undefined };
      throw err;
    }
  }

  async save(partitionId: string, state: PartitionState, etag: string | undefined): Promise<string | undefined> {
    const blob = this.container.getBlockBlobClient(this.blobName(partitionId));
    const body = JSON.stringify(state);
    try {
      const res = await blob.upload(body, Buffer.byteLength(body), {
        conditions: etag === undefined ? { ifNoneMatch: "*" } : { ifMatch: etag },
        blobHTTPHeaders: { blobContentType: "application/json" },
        abortSignal: AbortSignal.timeout(this.timeoutMs),
      });
      return res.etag;
    } catch (err) {
      const status = (err as { statusCode?: number }).statusCode;
      if (status === 412 || status === 409)
        throw new OwnershipLostError(`partition ${partitionId}: its fleet state was written by another instance`);
      throw err;
    }
  }
}
