// `sef fleet` as a running service: an EventHubConsumerClient sharing the hub's partitions with every other instance
// through the Blob checkpoint store (the SDK's load balancing), one PartitionProcessor per owned partition,
// notifications through the configured targets, and the /metrics, /healthz, /readyz endpoints.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as sleepTimer } from "node:timers/promises";
import { earliestEventPosition, latestEventPosition, type EventHubConsumerClient, type PartitionContext, type ReceivedEventData, type Subscription } from "@azure/event-hubs";
import { BlobCheckpointStore } from "@azure/eventhubs-checkpointstore-blob";
import { BlobServiceClient, type ContainerClient } from "@azure/storage-blob";
import type { Logger } from "pino";
import { createAzureCredential } from "../agent/sinks/azure-credential.js";
import { createConsumerClient, resolveEventHubsAuth } from "../agent/sinks/eventhubs/index.js";
import type { FleetEvent } from "./fleet-event.js";
import { FleetMetrics } from "./metrics.js";
import type { NotificationAction } from "./notification-plan.js";
import { BlobPartitionStateStore } from "./partition-state.js";
import { PartitionProcessor, type NotificationIdentity, type ProcessorClock } from "./partition-processor.js";
import { sendsInFlightFor, type FleetSettings, type TargetSettings } from "./settings.js";
import { deliver, type DeliveryOutcome } from "./targets/deliver.js";
import { buildTargetRequest } from "./targets/payloads.js";
import { SendSlots } from "./targets/send-slots.js";

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

export class FleetConfigError extends Error {
  override readonly name = "FleetConfigError";
}

function resolveTargets(settings: FleetSettings, env: NodeJS.ProcessEnv): Map<string, ResolvedTarget> {
  const targets = new Map<string, ResolvedTarget>();
  for (const t of settings.targets) {
    const url = t.urlEnv ? env[t.urlEnv] : (t.url ?? (t.type === "pagerduty" ? pagerDutyEventsUrl : undefined));
    if (!url) throw new FleetConfigError(`targets.${t.name}: environment variable ${t.urlEnv} is not set`);
    const routingKey = t.routingKeyEnv ? env[t.routingKeyEnv] : undefined;
    if (t.type === "pagerduty" && !routingKey) throw new FleetConfigError(`targets.${t.name}: environment variable ${t.routingKeyEnv} is not set`);
    const hmacSecret = t.hmacSecretEnv ? env[t.hmacSecretEnv] : undefined;
    targets.set(t.name, { settings: t, url, ...(routingKey ? { routingKey } : {}), ...(hmacSecret ? { hmacSecret } : {}) });
  }
  return targets;
}

function containerFor(settings: FleetSettings, env: NodeJS.ProcessEnv): ContainerClient {
  const cp = settings.checkpoints;
  if (cp.blobServiceUrl) {
    const credential = createAzureCredential("managedIdentity", settings.eventHubs.connection.managedIdentityClientId);
    return new BlobServiceClient(cp.blobServiceUrl, credential).getContainerClient(cp.containerName);
  }
  const connectionString = env[cp.connectionStringEnv];
  if (!connectionString) throw new FleetConfigError(`checkpoints: set blobServiceUrl or the environment variable ${cp.connectionStringEnv}`);
  return BlobServiceClient.fromConnectionString(connectionString).getContainerClient(cp.containerName);
}

const systemClock: ProcessorClock = {
  nowMs: () => Date.now(),
  monotonicMs: () => performance.now(),
  sleep: (ms, signal) => sleepTimer(ms, undefined, { signal }),
};

export async function startFleetService(options: FleetServiceOptions): Promise<FleetService> {
  const { settings, env, logger } = options;
  const targets = resolveTargets(settings, env);
  const metrics = new FleetMetrics([...targets.keys()]);
  const container = containerFor(settings, env);
  await container.createIfNotExists({ abortSignal: AbortSignal.timeout(settings.requestTimeoutMs) });
  const auth = resolveEventHubsAuth(settings.eventHubs.connection, env);
  const checkpointStore = new BlobCheckpointStore(container);
  const client: EventHubConsumerClient = createConsumerClient(
    auth,
    settings.eventHubs.consumerGroup,
    {
      customEndpointAddress: settings.eventHubs.connection.customEndpointAddress,
      maxRetries: settings.eventHubs.connection.maxRetries,
      retryDelayMs: settings.eventHubs.connection.retryDelayMs,
      maxRetryDelayMs: settings.eventHubs.connection.maxRetryDelayMs,
      tryTimeoutMs: settings.eventHubs.connection.tryTimeoutMs,
    },
    { checkpointStore, loadBalancingOptions: {
        strategy: "balanced",
        updateIntervalInMs: settings.loadBalancing.updateIntervalMs,
        partitionOwnershipExpirationIntervalInMs: settings.loadBalancing.ownershipExpirationMs,
      } },
  );
  const namespace = client.fullyQualifiedNamespace;
  const hubName = client.eventHubName;
  const stateStore = new BlobPartitionStateStore(container, `fleet-state/${namespace}/${hubName}/${settings.eventHubs.consumerGroup}`.toLowerCase(), settings.requestTimeoutMs);

  const processors = new Map<string, { processor: PartitionProcessor; controller: AbortController }>();
  let lastStoreError: string | null = null;
  let lastReceiveOk = false;

  // Requests already sent are cut off only when stop() gives up waiting for them; a closed partition lets them finish.
  const requestsGivenUp = new AbortController();
  const slots = new Map([...targets].map(([name, target]) => [name, new SendSlots(sendsInFlightFor(target.settings, settings))]));
  const send = async (targetName: string, notification: NotificationIdentity, event: FleetEvent, requestSignal: AbortSignal, startSignal: AbortSignal): Promise<DeliveryOutcome> => {
    const target = targets.get(targetName);
    const targetSlots = slots.get(targetName);
    if (!target || !targetSlots) return { kind: "rejected", reason: `no target named ${targetName}` };
    if (!(await targetSlots.acquire(startSignal))) return { kind: "retry", reason: "not sent: the partition was closed" };
    try {
      const req = buildTargetRequest(target.settings.type, event, notification, Date.now(), { ...(target.routingKey ? { routingKey: target.routingKey } : {}), ...(target.hmacSecret ? { hmacSecret: target.hmacSecret } : {}) });
      return await deliver(target.url, req, { timeoutMs: settings.requestTimeoutMs, signal: requestSignal });
    } finally {
      targetSlots.release();
    }
  };
  const onDeadLetter = async (target: string, action: NotificationAction, event: FleetEvent, reason: string): Promise<void> => {
    const body = JSON.stringify({ deadLetteredAt: new Date().toISOString(), target, action, reason, event });
    await container
      .getBlockBlobClient(`dead-letter/${target}/${event.key}-${action}.json`)
      .upload(body, Buffer.byteLength(body), { abortSignal: AbortSignal.timeout(settings.requestTimeoutMs) });
  };

  const refreshGauges = (): void => {
    metrics.ownedPartitions.set(processors.size);
    metrics.activeEvents.set([...processors.values()].reduce((n, p) => n + p.processor.activeEvents, 0));
  };

  const subscription: Subscription = client.subscribe(
    {
      processInitialize: async (context: PartitionContext) => {
        // Claimed again without a close in between: the earlier processor stops sending (its state is its own).
        processors.get(context.partitionId)?.controller.abort();
        const controller = new AbortController();
        const processor = await PartitionProcessor.open({
          partitionId: context.partitionId,
          rules: settings.rules,
          updateIntervalMs: settings.updateIntervalMs,
          retry: settings.retry,
          retainEndedMs: settings.retainEndedMs,
          staleClaimMs: settings.loadBalancing.ownershipExpirationMs,
          lateNoticeMs: settings.lateNoticeMs,
          store: stateStore,
          send,
          onDeadLetter,
          clock: systemClock,
          logger: logger.child({ partitionId: context.partitionId }),
          metrics,
          signal: controller.signal,
          requestSignal: requestsGivenUp.signal,
        });
        processors.set(context.partitionId, { processor, controller });
        refreshGauges();
        logger.info({ partitionId: context.partitionId, sequenceNumber: processor.lastSequenceNumber }, "partition claimed");
      },
      processEvents: async (events: ReceivedEventData[], context: PartitionContext) => {
        lastReceiveOk = true;
        const entry = processors.get(context.partitionId);
        if (!entry) return;
        const last = context.lastEnqueuedEventProperties;
        if (events.length > 0) {
          // A batch is retried until its state is durable: skipping it would move the checkpoint past unfolded records.
          for (let attempt = 1; ; attempt++) {
            try {
              await entry.processor.processBatch(events.map((e) => ({ body: e.body, sequenceNumber: e.sequenceNumber, offset: String(e.offset) })));
              lastStoreError = null;
              break;
            } catch (err) {
              lastStoreError = (err as Error).message;
              logger.warn({ partitionId: context.partitionId, attempt, err: { type: (err as Error).name, message: (err as Error).message } }, "could not save the partition's fleet state; retrying the batch");
              if (entry.controller.signal.aborted) return;
              await sleepTimer(Math.min(30_000, 500 * 2 ** Math.min(attempt, 6)), undefined, { signal: entry.controller.signal }).catch(() => undefined);
              if (entry.controller.signal.aborted) return;
            }
          }
          await context.updateCheckpoint(events[events.length - 1]!);
        }
        if (last?.sequenceNumber !== undefined) metrics.partitionLag.set({ partition: context.partitionId }, Math.max(0, last.sequenceNumber - entry.processor.lastSequenceNumber));
        refreshGauges();
      },
      processError: async (err: Error, context: PartitionContext) => {
        logger.warn({ partitionId: context.partitionId, err: { type: err.name, message: err.message } }, "event hubs error");
      },
      processClose: async (reason, context: PartitionContext) => {
        const entry = processors.get(context.partitionId);
        entry?.controller.abort();
        // Requests already sent finish and their outcomes are saved, so the next owner does not re-send them in doubt.
        await entry?.processor.settled(settings.requestTimeoutMs + closeSaveMarginMs);
        if (processors.get(context.partitionId) === entry) processors.delete(context.partitionId);
        metrics.partitionLag.remove({ partition: context.partitionId });
        refreshGauges();
        logger.info({ partitionId: context.partitionId, reason }, "partition released");
      },
    },
    {
      startPosition: settings.eventHubs.startPosition === "earliest" ? earliestEventPosition : latestEventPosition,
      maxBatchSize: 500,
      maxWaitTimeInSeconds: 1,
      trackLastEnqueuedEventProperties: true,
    },
  );

  const ticker = setInterval(() => {
    for (const [partitionId, entry] of processors) {
      entry.processor.tick().catch((err: Error) => {
        logger.warn({ partitionId, err: { type: err.name, message: err.message } }, "periodic re-plan failed");
      });
    }
    refreshGauges();
  }, settings.tickMs);
  ticker.unref();

  const server = createHealthServer(metrics, () => {
    if (!subscription.isRunning) return "not subscribed to the event hub";
    if (lastStoreError) return `blob storage: ${lastStoreError}`;
    if (!lastReceiveOk && processors.size > 0) return "no answer from the event hub yet";
    return null;
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(settings.metrics.port, settings.metrics.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;

  return {
    metrics,
    port,
    ownedPartitions: () => [...processors.keys()].sort(),
    stop: async (deadlineMs = 10_000) => {
      clearInterval(ticker);
      const stopStartedMs = performance.now();
      for (const entry of processors.values()) entry.controller.abort();
      // Let requests already sent be answered and saved (not re-sent in doubt by the next owner), within the deadline.
      await Promise.all([...processors.values()].map((entry) => entry.processor.settled(deadlineMs / 2)));
      requestsGivenUp.abort();
      const closing = (async () => {
        await subscription.close();
        await client.close();
      })();
      await Promise.race([closing, sleepTimer(Math.max(0, deadlineMs - (performance.now() - stopStartedMs)), undefined, { ref: false })]);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
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
      res.writeHead(reason ? 503 : 200, { "content-type": "application/json" }).end(JSON.stringify({ ready: reason === null, reason }));
      return;
    }
    res.writeHead(404).end();
  });
}
