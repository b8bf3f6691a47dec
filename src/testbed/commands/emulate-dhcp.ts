// `sef-testbed emulate dhcp`: runs the local DHCP responder (option 245) until SIGTERM/SIGINT.
import { InvalidArgumentError, type Command } from "commander";
import { peerCommand, stopSignal } from "./options.js";
import { dhcpReplyKinds, startDhcpResponder, type DhcpReplyKind } from "../dhcp/index.js";

interface EmulateDhcpFlags {
  port: number;
  host: string;
  option245: string;
  reply: DhcpReplyKind[][];
}

function parseReplies(value: string, previous: DhcpReplyKind[][]): DhcpReplyKind[][] {
  const kinds = value.split(",").map((k) => k.trim());
  const bad = kinds.find((k) => !(dhcpReplyKinds as readonly string[]).includes(k));
  if (bad !== undefined)
    throw new InvalidArgumentError(`unknown reply kind "${bad}" (expected ${dhcpReplyKinds.join(", ")})`);
  return [...previous, kinds as DhcpReplyKind[]];
}

export function registerEmulateDhcpCommand(emulate: Command): void {
  peerCommand(emulate, {
    name: "dhcp",
    description: "local DHCP responder answering with option 245 (the Azure host address), or with faulty replies",
    port: { protocol: "UDP", note: "67 needs root" },
  })
    .option("--option-245 <ipv4>", "address carried in option 245", "127.0.0.1")
    .option(
      "--reply <kinds>",
      `replies to the next request, comma-separated, repeatable per request (last repeats): ${dhcpReplyKinds.join(", ")}`,
      parseReplies,
      [],
    )
    .action(async (flags: EmulateDhcpFlags) => {
      const responder = await startDhcpResponder({
        port: flags.port,
        host: flags.host,
        option245: flags.option245,
        script: flags.reply.length > 0 ? flags.reply : undefined,
      });
      process.stdout.write(`sef-testbed emulate dhcp listening on udp://${responder.host}:${responder.port}\n`);
      await stopSignal();
      await responder.close();
      process.exit(0);
    });
}
