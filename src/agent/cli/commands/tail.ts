// `sef tail eventhubs`: prints records from an event hub as they arrive, one JSON per line on stdout
// (EventHubConsumerClient, $Default consumer group), with the same auth options as the Event Hubs sink.
import { InvalidArgumentError, type Command } from "commander";
import { earliestEventPosition, latestEventPosition } from "@azure/event-hubs";
import { createLogger, redactSecrets } from "../../observability/logger.js";
import { createConsumerClient, describeTarget, eventHubsSettingsSchema, resolveEventHubsAuth } from "../../sinks/eventhubs/index.js";
import { settingChoices, withDefault } from "../setting-help.js";

interface TailFlags {
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

function positiveInteger(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError("expected a positive integer");
  return n;
}

async function runTailEventHubs(flags: TailFlags): Promise<void> {
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

export function registerTailCommand(program: Command): void {
  const tail = program.command("tail").description("print records from a destination as they arrive");
  tail
    .command("eventhubs")
    .description("print records from an event hub, one JSON per line")
    .option("--connection-string-env <name>", withDefault("environment variable holding the connection string", "eventhubs.connectionStringEnv"))
    .option("--namespace <fqdn>", "fully qualified namespace: use Entra ID (managed identity) instead of a connection string")
    .option("--hub <name>", "event hub name (required with --namespace; else EntityPath of the connection string)")
    .option("--custom-endpoint <url>", "connect to this address instead (amqps://host:port)")
    .option("--credential <kind>", withDefault(`with --namespace: ${settingChoices("eventhubs.credential").join(" or ")}`, "eventhubs.credential"))
    .option("--client-id <id>", withDefault("user-assigned managed identity client id", "eventhubs.managedIdentityClientId"))
    .option("--consumer-group <name>", "consumer group", "$Default")
    .option("--from-start", "read from the start of each partition (without it: only new events)")
    .option("--max <n>", "stop after N records", positiveInteger)
    .option("--timeout-ms <ms>", "stop after this many ms", positiveInteger)
    .option("--log-level <level>", "log level (logs go to stderr)", "warn")
    .action(async (flags: TailFlags) => runTailEventHubs(flags));
}
