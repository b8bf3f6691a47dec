// `sef tail eventhubs`: the command's options. What it runs (tail-eventhubs.ts) and the Event Hubs SDK load only when it
// runs, so `sef --help` and a usage error cost no SDK.
import { InvalidArgumentError, type Command } from "commander";
import { settingChoices, withDefault } from "../setting-help.js";
import type { TailFlags } from "./tail-eventhubs.js";

function positiveInteger(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError("expected a positive integer");
  return n;
}

export function registerTailCommand(program: Command): void {
  const tail = program.command("tail").description("print records from a destination as they arrive");
  tail
    .command("eventhubs")
    .description("print records from an event hub, one JSON per line")
    .option(
      "--connection-string-env <name>",
      withDefault("environment variable holding the connection string", "eventhubs.connectionStringEnv"),
    )
    .option(
      "--namespace <fqdn>",
      "fully qualified namespace: use Entra ID (managed identity) instead of a connection string",
    )
    .option("--hub <name>", "event hub name (required with --namespace; else EntityPath of the connection string)")
    .option("--custom-endpoint <url>", "connect to this address instead (amqps://host:port)")
    .option(
      "--credential <kind>",
      withDefault(`with --namespace: ${settingChoices("eventhubs.credential").join(" or ")}`, "eventhubs.credential"),
    )
    .option(
      "--client-id <id>",
      withDefault("user-assigned managed identity client id", "eventhubs.managedIdentityClientId"),
    )
    .option("--consumer-group <name>", "consumer group", "$Default")
    .option("--from-start", "read from the start of each partition (without it: only new events)")
    .option("--max <n>", "stop after N records", positiveInteger)
    .option("--timeout-ms <ms>", "stop after this many ms", positiveInteger)
    .option("--log-level <level>", "log level (logs go to stderr)", "warn")
    .action(async (flags: TailFlags) => (await import("./tail-eventhubs.js")).runTailEventHubs(flags));
}
