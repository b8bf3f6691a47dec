// `sef tail eventhubs` at work: prints records from an event hub as they arrive, one JSON per line on stdout
// (EventHubConsumerClient, $Default consumer group), with the same auth options as the Event Hubs sink.
import { earliestEventPosition, latestEventPosition } from "@azure/event-hubs";
import { createLogger, redactSecrets } from "../../observability/logger.js";
import {
  createConsumerClient,
  describeTarget,
  eventHubsSettingsSchema,
  resolveEventHubsAuth,
} from "../../sinks/eventhubs/index.js";

export interface TailFlags {
  connectionStringEnv?: string;
  namespace?: string;
  hub?: string;
  customEndpoint?: string;
  credential?: "managedIdentity" | "default";
  clientId?: string;
  consumerGroup: string;
  fromStart?: boolean;
  max?: number;
  timeoutMs?: number;
  logLevel: string;
}

export async function runTailEventHubs(flags: TailFlags): Promise<void> {
  const logger = createLogger({ level: flags.logLevel });
  let settings;
  try {
    settings = eventHubsSettingsSchema.parse({
      ...(flags.connectionStringEnv ? { connectionStringEnv: flags.connectionStringEnv } : {}),
      ...(flags.namespace ? { fullyQualifiedNamespace: flags.namespace } : {}),
      ...(flags.hub ? { eventHubName: flags.hub } : {}),
      ...(flags.customEndpoint ? { customEndpointAddress: flags.customEndpoint } : {}),
      ...(flags.clientId ? { managedIdentityClientId: flags.clientId } : {}),
      ...(flags.credential ? { credential: flags.credential } : {}),
    });
    const auth = resolveEventHubsAuth(settings, process.env);
    const consumer = createConsumerClient(auth, flags.consumerGroup, {
      customEndpointAddress: settings.customEndpointAddress,
      maxRetries: settings.maxRetries,
      retryDelayMs: settings.retryDelayMs,
      maxRetryDelayMs: settings.maxRetryDelayMs,
      tryTimeoutMs: settings.tryTimeoutMs,
    });
    logger.info({ target: describeTarget(auth), fromStart: Boolean(flags.fromStart) }, "tailing");
    let printed = 0;
    await new Promise<void>((resolve) => {
      const timer = flags.timeoutMs ? setTimeout(resolve, flags.timeoutMs) : undefined;
      const stop = (): void => {
        if (timer) clearTimeout(timer);
        resolve();
      };
      process.once("SIGTERM", stop);
      process.once("SIGINT", stop);
      consumer.subscribe(
        {
          processEvents: async (events) => {
            for (const event of events) {
              if (flags.max !== undefined && printed >= flags.max) break;
              const body = Buffer.isBuffer(event.body) ? event.body.toString("utf8") : JSON.stringify(event.body);
              process.stdout.write(body + "\n");
              printed++;
            }
            if (flags.max !== undefined && printed >= flags.max) stop();
          },
          processError: async (err) => {
            logger.warn({ err: { message: redactSecrets(err.message) } }, "tail: receive error (retrying)");
          },
        },
        { startPosition: flags.fromStart ? earliestEventPosition : latestEventPosition, maxWaitTimeInSeconds: 1 },
      );
    });
    await consumer.close();
    logger.info({ printed }, "tail stopped");
  } catch (err) {
    process.stderr.write(`sef tail eventhubs: ${redactSecrets((err as Error).message)}\n`);
    process.exitCode = 2;
  }
}
