// The fleet state of one Event Hubs partition (fleet events and what each target was told) and its home in Blob
// Storage, written with an ETag condition so an instance that lost the partition can never overwrite its new owner.
import type { ContainerClient } from "@azure/storage-blob";
import type { FleetEvent } from "./fleet-event.js";
import type { NotificationState } from "./notification-plan.js";

export interface PartitionState {
  /** Sequence number of the last event folded (-1 before any): events at or below it are never folded again. */
  sequenceNumber: number;
  events: Record<string, FleetEvent>;
  /** Per fleet-event key, per target name. */
  notifications: Record<string, Record<string, NotificationState>>;
}

export function emptyPartitionState(): PartitionState {
  return { sequenceNumber: -1, events: {}, notifications: {} };
}

/** Another instance wrote the state since we read it: the partition has moved. */
export class OwnershipLostError extends Error {
  override readonly name = "OwnershipLostError";
}

export interface PartitionStateStore {
  load(partitionId: string): Promise<PartitionState>;
  save(partitionId: string, state: PartitionState): Promise<void>;
}

/** Keeps each partition's state as one JSON blob `<prefix>/<partitionId>.json`, ETag-guarded. */
export class BlobPartitionStateStore implements PartitionStateStore {
  private readonly etags = new Map<string, string | undefined>();

  constructor(
    private readonly container: ContainerClient,
    private readonly prefix: string,
    private readonly timeoutMs: number,
  ) {}

  private blobName(partitionId: string): string {
    return `${this.prefix}/${partitionId}.json`;
  }

  async load(partitionId: string): Promise<PartitionState> {
    const blob = this.container.getBlockBlobClient(this.blobName(partitionId));
    try {
      const body = await blob.downloadToBuffer(0, undefined, { abortSignal: AbortSignal.timeout(this.timeoutMs) });
      const props = await blob.getProperties({ abortSignal: AbortSignal.timeout(this.timeoutMs) });
      this.etags.set(partitionId, props.etag);
      return JSON.parse(body.toString("utf8")) as PartitionState;
    } catch (err) {
      if ((err as { statusCode?: number }).statusCode === 404) {
        this.etags.set(partitionId, undefined);
        return emptyPartitionState();
      }
      throw err;
    }
  }

  async save(partitionId: string, state: PartitionState): Promise<void> {
    const blob = this.container.getBlockBlobClient(this.blobName(partitionId));
    const body = JSON.stringify(state);
    const etag = this.etags.get(partitionId);
    try {
      const res = await blob.upload(body, Buffer.byteLength(body), {
        conditions: etag === undefined ? { ifNoneMatch: "*" } : { ifMatch: etag },
        blobHTTPHeaders: { blobContentType: "application/json" },
        abortSignal: AbortSignal.timeout(this.timeoutMs),
      });
      this.etags.set(partitionId, res.etag);
    } catch (err) {
      const status = (err as { statusCode?: number }).statusCode;
      if (status === 412 || status === 409) throw new OwnershipLostError(`partition ${partitionId}: its fleet state was written by another instance`);
      throw err;
    }
  }

  /** Forgets the ETag of a partition this instance no longer owns. */
  release(partitionId: string): void {
    this.etags.delete(partitionId);
  }
}
