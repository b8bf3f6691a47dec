// The fleet's Blob storage: the container (checkpoints, ownership, fleet state, dead letters) with the Blob SDK's own
// retries off, and the one retry owner of each Blob operation the fleet makes (@sef/retry's loop). Ownership claims and
// listings are the Event Hubs SDK's load balancer's: it tries again on its own schedule (`loadBalancing`), no sooner.
import { createHash } from "node:crypto";
import type { FleetEvent } from "./fleet-event.js";
import { BlobServiceClient, type ContainerClient, type StoragePipelineOptions } from "@azure/storage-blob";
import type { Logger } from "pino";
import type { RetryPolicy } from "@sef/retry/policy.js";
import { retry, retryAttempts, type RetryClock } from "@sef/retry/retry.js";
import { fleetCredential } from "./eventhubs-source.js";
import type { NotificationAction } from "./notification-plan.js";
import type { FleetSettings } from "./settings.js";
import { FleetConfigError } from "./errors.js";

/** One try per request: the fleet's loops below (and the load balancer's schedule) are the only retries. */
const oneTryPerRequest: StoragePipelineOptions = { retryOptions: { maxTries: 1 } };

/** Backoff of the fleet's Blob retries: 0.5–1 s, doubling up to 15–30 s. */
export const blobRetryPolicy: RetryPolicy = { initialDelayMs: 1000, maxDelayMs: 30_000, multiplier: 2 };

/** Dead-letter writes are tried this many times (the Blob SDK's own default), then logged as lost. */
const deadLetterAttempts = 4;

/** The checkpoint container: managed identity with `blobServiceUrl`, else the connection string in the environment. */
export function containerFor(settings: FleetSettings, env: NodeJS.ProcessEnv): ContainerClient {
  const cp = settings.checkpoints;
  if (cp.blobServiceUrl) {
    const credential = fleetCredential({
      credential: "managedIdentity",
      managedIdentityClientId: settings.eventHubs.connection.managedIdentityClientId,
    });
    return new BlobServiceClient(cp.blobServiceUrl, credential, oneTryPerRequest).getContainerClient(cp.containerName);
  }
  const connectionString = env[cp.connectionStringEnv];
  if (!connectionString)
    throw new FleetConfigError(`checkpoints: set blobServiceUrl or the environment variable ${cp.connectionStringEnv}`);
  return BlobServiceClient.fromConnectionString(connectionString, oneTryPerRequest).getContainerClient(
    cp.containerName,
  );
}

export interface StoreRetry {
  readonly clock: RetryClock;
  /** The partition's: aborted when it closes (its next owner starts over from the checkpoint). */
  readonly signal: AbortSignal;
  readonly logger: Logger;
  /** Hears every failure and every success (what /readyz says about Blob storage). */
  readonly onStoreError: (message: string | null) => void;
}

/**
 * Runs a Blob operation until it succeeds or the partition closes (undefined then), logging each retry with
 * `retryMessage`.
 */
export async function untilStored<T>(
  operation: () => Promise<T>,
  retryMessage: string,
  options: StoreRetry,
  /** Which failures are storage errors worth retrying (default: all); any other ends the loop, logged at error. */
  isStorageError: (err: unknown) => boolean = () => true,
): Promise<{ value: T } | undefined> {
  const { clock, signal, logger, onStoreError } = options;
  const end = await retryAttempts(
    async () => {
      try {
        const value = await operation();
        onStoreError(null);
        return value;
      } catch (err) {
        onStoreError((err as Error).message);
        throw err;
      }
    },
    {
      policy: blobRetryPolicy,
      clock,
      signal,
      verdict: (settled) => ({ retry: !settled.ok && isStorageError(settled.error) }),
      onRetry: (settled, attempt, delayMs) => {
        const err = settled.ok ? undefined : (settled.error as Error);
        logger.warn({ attempt, delayMs, err: { type: err?.name, message: err?.message } }, retryMessage);
      },
    },
  );
  if (end.last?.ok) return { value: end.last.value };
  if (end.end === "settled" && end.last !== undefined) {
    const err = end.last.error as Error;
    onStoreError(null); // not the storage's fault
    logger.error(
      { operation: retryMessage, err: { type: err?.name, message: err?.message } },
      "not retried: the failure is not a storage error",
    );
  }
  return undefined;
}

/** A name part as it goes into a blob name: itself when it is a plain key (letters, digits, `-`, `_`), else its hash. */
function blobNamePart(part: string): string {
  return /^[A-Za-z0-9_-]{1,64}$/.test(part) ? part : `sha256-${createHash("sha256").update(part).digest("hex")}`;
}

/**
 * `dead-letter/<target>/<event key>-<action>.json`, each part a plain key or its hash: no `/`, `..` or `%` from a
 * record or a config reaches the name, so a dead letter never lands outside `dead-letter/<target>/`.
 */
export function deadLetterBlobName(target: string, eventKey: string, action: NotificationAction): string {
  return `dead-letter/${blobNamePart(target)}/${blobNamePart(eventKey)}-${action}.json`;
}

/** Writes a notification given up on as one blob under `dead-letter/<target>/` (a few tries: then it is logged). */
export function deadLetterWriter(container: ContainerClient, settings: FleetSettings, clock: RetryClock) {
  return async (target: string, action: NotificationAction, event: FleetEvent, reason: string): Promise<void> => {
    const body = JSON.stringify({ deadLetteredAt: new Date().toISOString(), target, action, reason, event });
    const blob = container.getBlockBlobClient(deadLetterBlobName(target, event.key, action));
    await retry(
      () => blob.upload(body, Buffer.byteLength(body), { abortSignal: AbortSignal.timeout(settings.requestTimeoutMs) }),
      {
        policy: blobRetryPolicy,
        clock,
        maxAttempts: deadLetterAttempts,
      },
    );
  };
}
