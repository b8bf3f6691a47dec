// `sef-testbed emulate dhcp`: runs the local DHCP responder (option 245) until SIGTERM/SIGINT.
import { InvalidArgumentError, type Command } from "commander";
import { dhcpReplyKinds, startDhcpResponder, type DhcpReplyKind } from "../dhcp/index.js";

interface EmulateDhcpFlags {
  port: string;
  host: string;
  option245: string;
  reply: DhcpReplyKind[][];
}

function parseReplies(value: string, previous: DhcpReplyKind[][]): DhcpReplyKind[][] {
  const kinds = value.split(",").map((k) => k.trim());
  const bad = kinds.find((k) => !(dhcpReplyKinds as readonly string[]).includes(k));
  if (bad !== undefined) throw new InvalidArgumentError(`unknown reply kind "${bad}" (expected ${dhcpReplyKinds.join(", ")})`);
  return [...previous, kinds as DhcpReplyKind[]];
}

export function registerEmulateDhcpCommand(emulate: Command): void {
  emulate
    .command("dhcp")
    .description("local DHCP responder answering with option 245 (the Azure host address), or with faulty replies")
    .option("--port <n>", "UDP port (0 = any free port; 67 needs root)", "0")
    .option("--host <addr>", "listen address", "127.0.0.1")
    .option("--option-245 <ipv4>", "address carried in option 245", "127.0.0.1")
    .option("--reply <kinds>", `replies to the next request, comma-separated, repeatable per request (last repeats): ${dhcpReplyKinds.join(", ")}`, parseReplies, [])
    .action(async (flags: EmulateDhcpFlags) => {
      const port = Number(flags.port);
      if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port must be 0..65535 (got "${flags.port}")`);
      const responder = await startDhcpResponder({ port, host: flags.host, option245: flags.option245, script: flags.reply.length > 0 ? flags.reply : undefined });
      process.stdout.write(`sef-testbed emulate dhcp listening on udp://${responder.host}:${responder.port}\n`);
      await new Promise<void>((resolve) => {
        process.once("SIGTERM", resolve);
        process.once("SIGINT", resolve);
      });
      await responder.close();
      process.exit(0);
    });
}
