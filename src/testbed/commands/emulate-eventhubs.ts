// `sef-testbed emulate eventhubs`: the local AMQP 1.0 Event Hubs peer (see emulators/eventhubs), with fault-injection flags.
import type { Command } from "commander";
import { defaultConsumerGroup, eventHubsTiers, type EventHubsTier } from "../peers/eventhubs/tiers.js";
import { sendFaults, type SendFault } from "../peers/eventhubs/faults.js";
import { collect, integerFrom, oneOf, peerCommand, servePeer } from "./options.js";

export const defaultEmulateEventHubsPort = 5672;

interface EmulateEventHubsFlags {
  port: number;
  host: string;
  tls?: boolean;
  hub: string;
  partitions: number;
  tier: EventHubsTier;
  maxMessageSize?: number;
  consumerGroup: string[];
  caCertOut?: string;
  failNextSends: number;
  failWith: SendFault;
  acceptDelayMs: number;
  logLevel: string;
}

function runEmulateEventHubs(flags: EmulateEventHubsFlags): Promise<void> {
  return servePeer(
    flags.logLevel,
    async (logger) => {
      const { startEventHubsEmulator } = await import("../peers/eventhubs/server.js");
      const emulator = await startEventHubsEmulator({
        port: flags.port,
        host: flags.host,
        tls: flags.tls ?? false,
        hubName: flags.hub,
        partitionCount: flags.partitions,
        tier: flags.tier,
        ...(flags.maxMessageSize !== undefined ? { maxMessageSize: flags.maxMessageSize } : {}),
        consumerGroups: flags.consumerGroup.length > 0 ? flags.consumerGroup : [defaultConsumerGroup],
        ...(flags.caCertOut ? { caCertPath: flags.caCertOut } : {}),
        logger,
      });
      if (flags.failNextSends > 0) emulator.faults.failNextSends(flags.failNextSends, flags.failWith);
      if (flags.acceptDelayMs > 0) emulator.faults.setAcceptDelayMs(flags.acceptDelayMs);
      return emulator;
    },
    {
      ready: (emulator, logger) => {
        process.stdout.write(`sef-testbed emulate eventhubs listening on ${emulator.url}\n`);
        // The connection string of a local emulator carries only its well-known development key.
        process.stderr.write(`connection string: ${emulator.connectionString}\n`);
        if (emulator.caCertPath) process.stderr.write(`CA certificate (NODE_EXTRA_CA_CERTS): ${emulator.caCertPath}\n`);
        logger.info(
          {
            hub: flags.hub,
            partitions: flags.partitions,
            tier: flags.tier,
            maxMessageSize: emulator.maxMessageSize,
            consumerGroups: flags.consumerGroup,
            url: emulator.url,
          },
          "eventhubs peer ready",
        );
      },
      stopped: (emulator, logger) => logger.info({ stored: emulator.events().length }, "eventhubs peer stopped"),
    },
  );
}

export function registerEmulateEventHubsCommand(emulate: Command): void {
  peerCommand(emulate, {
    name: "eventhubs",
    description: "local AMQP 1.0 Event Hubs peer the real @azure/event-hubs clients talk to",
    port: { default: defaultEmulateEventHubsPort },
  })
    .option("--tls", "serve AMQPS with a self-signed certificate (for token credentials)")
    .option("--hub <name>", "event hub name", "sef")
    .option("--partitions <n>", "partition count", integerFrom(1, 32), 2)
    .option(
      "--tier <tier>",
      `namespace tier, sets the message/batch size limit: ${eventHubsTiers.join(", ")}`,
      oneOf(eventHubsTiers),
      "standard" as EventHubsTier,
    )
    .option(
      "--max-message-size <bytes>",
      "message/batch size limit in bytes, overriding the tier's (262144 = Basic)",
      integerFrom(1024, 16 * 1024 * 1024),
    )
    .option(
      "--consumer-group <name>",
      `a consumer group that exists (repeat for more; default ${defaultConsumerGroup})`,
      collect,
      [] as string[],
    )
    .option("--ca-cert-out <file>", "where to write the certificate PEM (with --tls)")
    .option("--fail-next-sends <n>", "make the next N sends fail (see --fail-with)", integerFrom(0, 1_000_000), 0)
    .option(
      "--fail-with <fault>",
      `fault for --fail-next-sends: ${sendFaults.join(", ")}`,
      oneOf(sendFaults),
      "server-busy" as SendFault,
    )
    .option("--accept-delay-ms <ms>", "delay every accept by this many ms (a slow service)", integerFrom(0, 600_000), 0)
    .option("--log-level <level>", "log level (logs go to stderr)", "info")
    .action(async (flags: EmulateEventHubsFlags) => runEmulateEventHubs(flags));
}
