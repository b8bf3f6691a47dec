// ISC dhclient lease files (`/var/lib/dhcp/dhclient*.leases`, NetworkManager's `dhclient-*.lease`): the newest
// unexpired `lease { … }` block carrying `option unknown-245 a8:3f:81:10;` (or a dotted form) gives the address.
import { DiscoveryParseError } from "./failure.js";
import { decodeOption245Text, ipv4FromOptionBytes } from "./option245.js";

interface LeaseBlock {
  option245?: string;
  option245Error?: DiscoveryParseError;
  expiresMs: number | null;
}

/** Returns the option 245 address of the last unexpired lease; throws DiscoveryParseError otherwise. */
export function parseDhclientLeases(text: string, nowMs: number): string {
  const blocks = splitLeaseBlocks(text);
  if (blocks.length === 0) throw new DiscoveryParseError("no-option-245", "no IPv4 lease { … } block");
  const leases = blocks.map(parseLeaseBlock);
  const withOption = leases.filter((l) => l.option245 !== undefined);
  const current = withOption.filter((l) => l.expiresMs === null || l.expiresMs > nowMs);
  if (current.length > 0) return current[current.length - 1]!.option245!;
  if (withOption.length > 0)
    throw new DiscoveryParseError("expired", `all ${withOption.length} lease(s) carrying option 245 have expired`);
  const bad = leases.find((l) => l.option245Error !== undefined);
  if (bad) throw bad.option245Error!;
  throw new DiscoveryParseError("no-option-245", `none of ${leases.length} lease(s) carries option 245`);
}

/** The statements of each IPv4 `lease { … }` block; other blocks (dhclient6's nested `lease6 { … }`) are skipped. */
function splitLeaseBlocks(text: string): string[][] {
  const blocks: string[][] = [];
  let current: string[] | undefined;
  let skippedDepth = 0;
  text.split(/\r?\n/).forEach((rawLine, index) => {
    const line = rawLine.split("#", 1)[0]!.trim();
    if (line === "") return;
    const where = `line ${index + 1}`;
    if (skippedDepth > 0) {
      skippedDepth += (line.match(/\{/g)?.length ?? 0) - (line.match(/\}/g)?.length ?? 0);
      if (skippedDepth < 0) throw new DiscoveryParseError("malformed", `${where}: unbalanced "}"`);
      return;
    }
    if (current === undefined) {
      if (/^lease\s*\{$/.test(line)) current = [];
      else if (/^[a-z0-9-]+(\s+\S+)*\s*\{$/i.test(line)) skippedDepth = 1;
      else if (!line.endsWith(";"))
        throw new DiscoveryParseError("malformed", `${where}: expected "lease {" or a statement ending in ";"`);
      return;
    }
    if (line === "}") {
      blocks.push(current);
      current = undefined;
    } else if (line.includes("{") || line.includes("}")) {
      throw new DiscoveryParseError("malformed", `${where}: unexpected brace inside a lease`);
    } else if (!line.endsWith(";")) {
      throw new DiscoveryParseError("malformed", `${where}: statement does not end in ";"`);
    } else {
      current.push(line.slice(0, -1).trim());
    }
  });
  if (current !== undefined || skippedDepth > 0)
    throw new DiscoveryParseError("malformed", "the last block is not closed");
  return blocks;
}

function parseLeaseBlock(statements: string[]): LeaseBlock {
  const lease: LeaseBlock = { expiresMs: null };
  for (const statement of statements) {
    const option = /^option\s+(?:unknown-245|option-245)\s+(.+)/is.exec(statement);
    if (option) {
      try {
        lease.option245 = decodeDhclientValue(option[1]!);
      } catch (err) {
        if (!(err instanceof DiscoveryParseError)) throw err;
        lease.option245Error = err;
      }
      continue;
    }
    const expire = /^expire\s+(.+)/s.exec(statement);
    if (expire) lease.expiresMs = parseExpiry(expire[1]!);
  }
  return lease;
}

/** dhclient prints an unknown option as hex bytes, or as a quoted string when every byte is printable. */
function decodeDhclientValue(value: string): string {
  const quoted = /^"((?:[^"\\]|\\.)*)"$/.exec(value);
  if (!quoted) return decodeOption245Text(value);
  // Each byte: `\ooo` (octal), `\c` (the character c), or a character as it is.
  const bytes = Array.from(quoted[1]!.matchAll(/\\([0-7]{3})|\\(.)|(.)/gs), ([, octal, escaped, plain]) =>
    octal !== undefined ? parseInt(octal, 8) : (escaped ?? plain)!.charCodeAt(0),
  );
  return ipv4FromOptionBytes(Uint8Array.from(bytes));
}

/** `expire 4 2026/11/26 12:00:00` (UTC), `expire epoch 1795000000`, or `expire never`. */
function parseExpiry(value: string): number | null {
  if (value === "never") return null;
  const epoch = /^epoch\s+(\d+)$/.exec(value);
  if (epoch) return Number(epoch[1]) * 1000;
  const dated = /^\d\s+(\d{4})\/(\d{1,2})\/(\d{1,2})\s+(\d{1,2}):(\d{2}):(\d{2})$/.exec(value);
  if (!dated) throw new DiscoveryParseError("malformed", `cannot read "expire ${value}"`);
  const [y, mo, d, h, mi, s] = dated.slice(1).map(Number) as [number, number, number, number, number, number];
  return Date.UTC(y, mo - 1, d, h, mi, s);
}
