// The fleet service (`sef-fleet`) running: an EventHubConsumerClient sharing the hub's partitions with every other instance
// through the Blob checkpoint store (the SDK's load balancing), one PartitionProcessor per owned partition,
// notifications through the configured targets, and the /metrics, /healthz, /readyz endpoints.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as sleepTimer } from "node:timers/promises";
import {
  earliestEventPosition,
  latestEventPosition,
  type EventHubConsumerClient,
  type PartitionContext,
  type ReceivedEventData,
  type Subscription,
} from "@azure/event-hubs";
import { BlobCheckpointStore } from "@azure/eventhubs-checkpointstore-blob";
import type { ContainerClient } from "@azure/storage-blob";
import type { Logger } from "pino";
import { LatestCheckpoint } from "./latest-checkpoint.js";
import { containerFor, deadLetterWriter, untilStored, type StoreRetry } from "./blob-storage.js";
import { FleetConfigError, PartitionClosedError } from "./errors.js";
import { createFleetConsumer } from "./eventhubs-source.js";
import type { FleetEvent } from "./fleet-event.js";
import { FleetMetrics } from "./metrics.js";
import { BlobPartitionStateStore } from "./journal-state-store.js";
import { KnownReporters } from "./partition-bounds.js";
import {
  isStorageFailure,
  PartitionProcessor,
  type NotificationIdentity,
  type ProcessorClock,
  type ProcessorOptions,
} from "./partition-processor.js";
import { sendsInFlightFor, type FleetSettings, type TargetSettings } from "./settings.js";
import { deliver, type DeliveryOutcome } from "./targets/deliver.js";
import { buildTargetRequest } from "./targets/payloads.js";
import { priorityOf, SendSlots } from "./targets/send-slots.js";

/** Time past the request deadline a closing partition gives its last outcomes to be saved. */
const closeSaveMarginMs = 2000;

export interface FleetServiceOptions {
  readonly settings: FleetSettings;
  readonly env: NodeJS.ProcessEnv;
  readonly logger: Logger;
}

export interface FleetService {
  readonly metrics: FleetMetrics;
  /** Port of the metrics/health server. */
  readonly port: number;
  ownedPartitions(): string[];
  /** Stops receiving, lets in-flight batches finish (bounded), closes clients. */
  stop(deadlineMs?: number): Promise<void>;
}

/** A target with its secrets read from the environment; never logged. */
interface ResolvedTarget {
  readonly settings: TargetSettings;
  readonly url: string;
  readonly routingKey?: string;
  readonly hmacSecret?: string;
}

const pagerDutyEventsUrl = "https://events.pagerduty.com/v2/enqueue";

export { FleetConfigError };

function resolveTargets(settings: FleetSettings, env: NodeJS.ProcessEnv): Map<string, ResolvedTarget> {
  const targets = new Map<string, ResolvedTarget>();
  for (const t of settings.targets) {
    const url = t.urlEnv ? env[t.urlEnv] : (t.url ?? (t.type === "pagerduty" ? pagerDutyEventsUrl : undefined));
    if (!url) throw new FleetConfigError(`targets.${t.name}: environment variable ${t.urlEnv} is not set`);
    const routingKey = t.routingKeyEnv ? env[t.routingKeyEnv] : undefined;
    if (t.type === "pagerduty" && !routingKey)
      throw new FleetConfigError(`targets.${t.name}: environment variable ${t.routingKeyEnv} is not set`);
    const hmacSecret = t.hmacSecretEnv ? env[t.hmacSecretEnv] : undefined;
    targets.set(t.name, {
      settings: t,
      url,
      ...(routingKey ? { routingKey } : {}),
      ...(hmacSecret ? { hmacSecret } : {}),
    });
  }
  return targets;
}

const systemClock: ProcessorClock = {
  nowMs: () => Date.now(),
  monotonicMs: () => performance.now(),
  sleep: (ms, signal) => sleepTimer(ms, undefined, { signal }),
};

/** The partitions this instance owns, and what /readyz judges about them. */
/** One owned partition: its processor, what closes it, and its checkpoint's writer. */
interface OwnedPartition {
  readonly processor: PartitionProcessor;
  readonly controller: AbortController;
  readonly checkpoint: LatestCheckpoint<{ readonly context: PartitionContext; readonly event: ReceivedEventData }>;
}

interface OwnedPartitions {
  readonly processors: Map<string, OwnedPartition>;
  lastStoreError: string | null;
  lastReceiveOk: boolean;
}

export async function startFleetService(options: FleetServiceOptions): Promise<FleetService> {
  const { settings, env, logger } = options;
  const targets = resolveTargets(settings, env);
  const metrics = new FleetMetrics([...targets.keys()]);
  const container = containerFor(settings, env);
  await container.createIfNotExists({ abortSignal: AbortSignal.timeout(settings.requestTimeoutMs) });
  const client = openConsumer(settings, env, container);
  const stateStore = new BlobPartitionStateStore(
    container,
    `fleet-state/${client.fullyQualifiedNamespace}/${client.eventHubName}/${settings.eventHubs.consumerGroup}`.toLowerCase(),
    settings.requestTimeoutMs,
  );
  const owned: OwnedPartitions = { processors: new Map(), lastStoreError: null, lastReceiveOk: false };
  const knownReporters = countedKnownReporters(settings, metrics);
  const refreshGauges = (): void => refreshFleetGauges(metrics, owned, knownReporters);

  // Requests already sent are cut off only when stop() gives up waiting for them; a closed partition lets them finish.
  const requestsGivenUp = new AbortController();
  // One sender for every partition: a target's slots of requests in flight are per instance.
  const send = targetSender(targets, settings);
  const onDeadLetter = deadLetterWriter(container, settings, systemClock);
  const storeRetry = storeRetries(owned, logger);
  const openProcessor = processorOpener(client, settings, storeRetry, (partitionId, signal) => ({
    ...processorSettings(settings),
    partitionId,
    store: stateStore,
    knownReporters,
    send,
    onDeadLetter,
    clock: systemClock,
    logger: logger.child({ partitionId }),
    metrics,
    signal,
    requestSignal: requestsGivenUp.signal,
  }));
  const subscription: Subscription = client.subscribe(
    partitionHandlers({ owned, openProcessor, storeRetry, refreshGauges, settings, metrics, logger }),
    {
      startPosition: settings.eventHubs.startPosition === "earliest" ? earliestEventPosition : latestEventPosition,
      maxBatchSize: 500,
      maxWaitTimeInSeconds: 1,
      trackLastEnqueuedEventProperties: true,
    },
  );

  const ticker = setInterval(() => {
    for (const [partitionId, entry] of owned.processors) {
      entry.processor.tick().catch((err: Error) => {
        logger.warn({ partitionId, err: { type: err.name, message: err.message } }, "periodic re-plan failed");
      });
    }
    refreshGauges();
  }, settings.tickMs);
  ticker.unref();

  const server = await listenHealthServer(metrics, settings, () => {
    if (!subscription.isRunning) return "not subscribed to the event hub";
    if (owned.lastStoreError) return `blob storage: ${owned.lastStoreError}`;
    if (!owned.lastReceiveOk && owned.processors.size > 0) return "no answer from the event hub yet";
    return null;
  });

  return {
    metrics,
    port: (server.address() as AddressInfo).port,
    ownedPartitions: () => [...owned.processors.keys()].sort(),
    stop: async (deadlineMs = 10_000) => {
      clearInterval(ticker);
      const stopStartedMs = performance.now();
      await stopPartitions(owned, requestsGivenUp, deadlineMs, async () => {
        await subscription.close();
        await client.close();
      });
      // Snapshots still being written beside the batches (the journals before them hold the state meanwhile).
      await stateStore.settled(Math.max(0, deadlineMs - (performance.now() - stopStartedMs)));
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The instance's known reporters (shared by its partitions), each one forgotten for want of room counted. */
function countedKnownReporters(settings: FleetSettings, metrics: FleetMetrics): KnownReporters {
  return new KnownReporters(settings.bounds.reporterKnownAfterMs, {
    onForgotten: (count) => metrics.reportersForgotten.inc(count),
  });
}

/** The gauges of what this instance holds: partitions, reporters remembered, open events. */
function refreshFleetGauges(metrics: FleetMetrics, owned: OwnedPartitions, knownReporters: KnownReporters): void {
  metrics.ownedPartitions.set(owned.processors.size);
  metrics.knownReporters.set(knownReporters.size);
  metrics.activeEvents.set([...owned.processors.values()].reduce((n, p) => n + p.processor.activeEvents, 0));
}

/**
 * Stops every partition: requests already sent are answered and saved (not re-sent in doubt by the next owner) within
 * half the deadline, then the rest are cut off and the clients get what is left of it to close.
 */
async function stopPartitions(
  owned: OwnedPartitions,
  requestsGivenUp: AbortController,
  deadlineMs: number,
  closeClients: () => Promise<void>,
): Promise<void> {
  const stopStartedMs = performance.now();
  for (const entry of owned.processors.values()) entry.controller.abort();
  await Promise.all([...owned.processors.values()].map((entry) => entry.processor.settled(deadlineMs / 2)));
  requestsGivenUp.abort();
  await Promise.race([
    closeClients(),
    sleepTimer(Math.max(0, deadlineMs - (performance.now() - stopStartedMs)), undefined, { ref: false }),
  ]);
}

/** The /metrics, /healthz, /readyz server, listening on `metrics.host:metrics.port`. */
async function listenHealthServer(
  metrics: FleetMetrics,
  settings: FleetSettings,
  notReadyReason: () => string | null,
): Promise<Server> {
  const server = createHealthServer(metrics, notReadyReason);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(settings.metrics.port, settings.metrics.host, () => resolve());
  });
  return server;
}

/** What every partition's processor takes from the settings. */
function processorSettings(settings: FleetSettings) {
  return {
    rules: settings.rules,
    updateIntervalMs: settings.updateIntervalMs,
    retry: settings.retry,
    retainEndedMs: settings.retainEndedMs,
    bounds: settings.bounds,
    staleClaimMs: settings.loadBalancing.ownershipExpirationMs,
    lateNoticeMs: settings.lateNoticeMs,
  };
}

/** The consumer client, sharing the hub's partitions with the other instances through the Blob checkpoint store. */
function openConsumer(
  settings: FleetSettings,
  env: NodeJS.ProcessEnv,
  container: ContainerClient,
): EventHubConsumerClient {
  return createFleetConsumer(
    settings.eventHubs.connection,
    settings.eventHubs.consumerGroup,
    new BlobCheckpointStore(container),
    {
      strategy: "balanced",
      updateIntervalInMs: settings.loadBalancing.updateIntervalMs,
      partitionOwnershipExpirationIntervalInMs: settings.loadBalancing.ownershipExpirationMs,
    },
    env,
  );
}

/** Sends one notification to a target, within the target's slots of requests in flight. */
function targetSender(targets: ReadonlyMap<string, ResolvedTarget>, settings: FleetSettings) {
  const slots = new Map(
    [...targets].map(([name, target]) => [name, new SendSlots(sendsInFlightFor(target.settings, settings))]),
  );
  return async (
    targetName: string,
    notification: NotificationIdentity,
    event: FleetEvent,
    requestSignal: AbortSignal,
    startSignal: AbortSignal,
  ): Promise<DeliveryOutcome> => {
    const target = targets.get(targetName);
    const targetSlots = slots.get(targetName);
    if (!target || !targetSlots) return { kind: "rejected", reason: `no target named ${targetName}` };
    // A new event's first notification goes ahead of updates and resolves of events already told.
    if (!(await targetSlots.acquire(startSignal, priorityOf(notification))))
      return { kind: "retry", reason: "not sent: the partition was closed" };
    try {
      const req = buildTargetRequest(target.settings.type, event, notification, Date.now(), {
        ...(target.routingKey ? { routingKey: target.routingKey } : {}),
        ...(target.hmacSecret ? { hmacSecret: target.hmacSecret } : {}),
      });
      return await deliver(target.url, req, { timeoutMs: settings.requestTimeoutMs, signal: requestSignal });
    } finally {
      targetSlots.release();
    }
  };
}

interface PartitionHandlerDeps {
  readonly owned: OwnedPartitions;
  openProcessor(partitionId: string, signal: AbortSignal): Promise<PartitionProcessor>;
  storeRetry(signal: AbortSignal, partitionId: string): StoreRetry;
  refreshGauges(): void;
  readonly settings: FleetSettings;
  readonly metrics: FleetMetrics;
  readonly logger: Logger;
}

/** The subscription's handlers: a claimed partition gets a processor, its batches are folded durably, a release closes it. */
function partitionHandlers(deps: PartitionHandlerDeps) {
  const { owned, refreshGauges, settings, metrics, logger } = deps;
  return {
    processInitialize: async (context: PartitionContext) => {
      // Claimed again without a close in between: the earlier processor stops sending (its state is its own).
      owned.processors.get(context.partitionId)?.controller.abort();
      const controller = new AbortController();
      const processor = await deps.openProcessor(context.partitionId, controller.signal);
      const checkpoint = checkpointWriter(deps.storeRetry(controller.signal, context.partitionId));
      owned.processors.set(context.partitionId, { processor, controller, checkpoint });
      refreshGauges();
      logger.info(
        { partitionId: context.partitionId, sequenceNumber: processor.lastSequenceNumber },
        "partition claimed",
      );
    },
    processEvents: async (events: ReceivedEventData[], context: PartitionContext) => {
      owned.lastReceiveOk = true;
      const entry = owned.processors.get(context.partitionId);
      if (!entry) return;
      const last = context.lastEnqueuedEventProperties;
      if (events.length > 0) {
        const retry = deps.storeRetry(entry.controller.signal, context.partitionId);
        // Folded durably before the checkpoint moves (skipping a batch would move it past unfolded records). Its claims
        // are saved with it: their sends go on while the next batch is read (a slow target holds no partition back).
        const received = events.map((e) => ({
          body: e.body,
          sequenceNumber: e.sequenceNumber,
          offset: String(e.offset),
        }));
        const folded = await untilStored(
          () => entry.processor.foldBatch(received),
          "could not save the partition's fleet state; retrying the batch",
          retry,
          isStorageFailure,
        );
        if (folded === undefined) return;
        folded.value.notified.catch((err: Error) => notifyFailed(logger, context.partitionId, err));
        // Written beside the next batches: the next one is read at once (the fold state skips what a lagging checkpoint
        // makes the next owner read again).
        entry.checkpoint.request({ context, event: events[events.length - 1]! });
      }
      if (last?.sequenceNumber !== undefined)
        metrics.partitionLag.set(
          { partition: context.partitionId },
          Math.max(0, last.sequenceNumber - entry.processor.lastSequenceNumber),
        );
      refreshGauges();
    },
    processError: async (err: Error, context: PartitionContext) => {
      logger.warn(
        { partitionId: context.partitionId, err: { type: err.name, message: err.message } },
        "event hubs error",
      );
    },
    processClose: async (reason: string, context: PartitionContext) => {
      const entry = owned.processors.get(context.partitionId);
      entry?.controller.abort();
      // Requests already sent finish and their outcomes are saved, so the next owner does not re-send them in doubt.
      await entry?.processor.settled(settings.requestTimeoutMs + closeSaveMarginMs);
      // Its retries ended with the close: a write in flight is waited for within one request's time.
      await Promise.race([
        entry?.checkpoint.written(),
        sleepTimer(settings.requestTimeoutMs, undefined, { ref: false }),
      ]);
      if (owned.processors.get(context.partitionId) === entry) owned.processors.delete(context.partitionId);
      metrics.partitionLag.remove({ partition: context.partitionId });
      refreshGauges();
      logger.info({ partitionId: context.partitionId, reason }, "partition released");
    },
  };
}

/** A partition's checkpoint writer: each write retried until Blob storage answers or the partition closes (its log). */
function checkpointWriter(retry: StoreRetry): OwnedPartition["checkpoint"] {
  return new LatestCheckpoint(
    (at) => untilStored(() => at.context.updateCheckpoint(at.event), "could not save the checkpoint; retrying", retry),
    (err) =>
      retry.logger.error(
        { err: { type: (err as Error).name, message: (err as Error).message } },
        "the checkpoint writer failed (not a storage error)",
      ),
  );
}

/**
 * A batch's sends or the save of their outcomes failed: an outcome not saved is saved by the next re-plan (`tickMs`);
 * a sender that threw (a bug) leaves its claim, sent again once stale.
 */
function notifyFailed(logger: Logger, partitionId: string, err: Error): void {
  const storage = isStorageFailure(err);
  logger[storage ? "warn" : "error"](
    { partitionId, err: { type: err.name, message: err.message } },
    storage
      ? "could not save notification outcomes; the next re-plan saves them"
      : "a notification could not be sent (not a delivery outcome)",
  );
}

/** The fleet's Blob retries for one partition: on the system clock, ended by its close, telling /readyz of failures. */
function storeRetries(
  owned: OwnedPartitions,
  logger: Logger,
): (signal: AbortSignal, partitionId: string) => StoreRetry {
  return (signal, partitionId) => ({
    clock: systemClock,
    signal,
    logger: logger.child({ partitionId }),
    onStoreError: (message) => (owned.lastStoreError = message),
  });
}

/**
 * Opens a claimed partition's processor: its state loaded until Blob storage answers, and its place among the hub's
 * partitions (records of one EventId belong in the partition its hash names), the ids asked once.
 */
function processorOpener(
  client: EventHubConsumerClient,
  settings: FleetSettings,
  storeRetry: (signal: AbortSignal, partitionId: string) => StoreRetry,
  optionsFor: (partitionId: string, signal: AbortSignal) => Omit<ProcessorOptions, "placement">,
): (partitionId: string, signal: AbortSignal) => Promise<PartitionProcessor> {
  const hubPartitionIds = partitionIdsOnce(client, settings.requestTimeoutMs);
  return (partitionId, signal) =>
    openUntilLoaded(storeRetry(signal, partitionId), async () => {
      const partitionIds = await hubPartitionIds();
      const placement = { index: partitionIds.indexOf(partitionId), count: partitionIds.length };
      return PartitionProcessor.open({ ...optionsFor(partitionId, signal), placement });
    });
}

/** The hub's partition ids, asked when first needed and kept (a failed answer is asked again next time). */
function partitionIdsOnce(client: EventHubConsumerClient, timeoutMs: number): () => Promise<string[]> {
  let ids: Promise<string[]> | undefined;
  return () =>
    (ids ??= client.getPartitionIds({ abortSignal: AbortSignal.timeout(timeoutMs) }).catch((err: unknown) => {
      ids = undefined;
      throw err;
    }));
}

/** Opens a partition's processor, loading its state until Blob storage answers (or the partition closes). */
async function openUntilLoaded(
  retry: StoreRetry,
  open: () => Promise<PartitionProcessor>,
): Promise<PartitionProcessor> {
  const opened = await untilStored(open, "could not load the partition's fleet state; retrying", retry);
  if (opened === undefined) throw new PartitionClosedError("the partition closed before its fleet state was loaded");
  return opened.value;
}

function createHealthServer(metrics: FleetMetrics, notReadyReason: () => string | null): Server {
  return createServer((req, res) => {
    if (req.url === "/metrics") {
      metrics.registry
        .metrics()
        .then((text) => res.writeHead(200, { "content-type": metrics.registry.contentType }).end(text))
        .catch(() => res.writeHead(500).end());
      return;
    }
    if (req.url === "/healthz") {
      res.writeHead(200, { "content-type": "text/plain" }).end("ok\n");
      return;
    }
    if (req.url === "/readyz") {
      const reason = notReadyReason();
      res
        .writeHead(reason ? 503 : 200, { "content-type": "application/json" })
        .end(JSON.stringify({ ready: reason === null, reason }));
      return;
    }
    res.writeHead(404).end();
  });
}
