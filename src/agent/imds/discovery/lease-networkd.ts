// systemd-networkd lease files (`/run/systemd/netif/leases/IFINDEX`): the classic environment-file form writes
// private options as `OPTION_245=A83F8110`; newer releases write JSON with `"Private_Options":[{"Option":245,"Data":"a83f8110"}]`.
import { DiscoveryParseError } from "./failure.js";
import { decodeOption245Text } from "./option245.js";

export function parseNetworkdLease(text: string): string {
  return text.trimStart().startsWith("{") ? parseJsonLease(text) : parseEnvLease(text);
}

function parseEnvLease(text: string): string {
  let option: string | undefined;
  let sawKey = false;
  text.split(/\r?\n/).forEach((rawLine, index) => {
    const line = rawLine.trim();
    if (line === "" || line.startsWith("#")) return;
    const match = /^([A-Z][A-Z0-9_]*)=(.*)$/.exec(line);
    if (!match) throw new DiscoveryParseError("malformed", `line ${index + 1}: expected KEY=VALUE`);
    sawKey = true;
    if (match[1] === "OPTION_245") option = match[2]!;
  });
  if (!sawKey) throw new DiscoveryParseError("malformed", "no KEY=VALUE lines");
  if (option === undefined) throw new DiscoveryParseError("no-option-245", "no OPTION_245 line");
  return decodeOption245Text(option);
}

function parseJsonLease(text: string): string {
  let lease: unknown;
  try {
    lease = JSON.parse(text);
  } catch (err) {
    throw new DiscoveryParseError("malformed", `not valid JSON (${(err as Error).message})`);
  }
  // The text starts with "{": what parses is an object.
  const options = (lease as { Private_Options?: unknown }).Private_Options;
  if (options === undefined) throw new DiscoveryParseError("no-option-245", "no Private_Options");
  if (!Array.isArray(options)) throw new DiscoveryParseError("malformed", "Private_Options is not an array");
  // `?.` passes null and undefined; any other value's missing Option reads as undefined.
  const option = options.find((o) => (o as { Option?: unknown } | null | undefined)?.Option === 245) as
    { Data?: unknown } | undefined;
  if (option === undefined) throw new DiscoveryParseError("no-option-245", "Private_Options has no option 245");
  if (typeof option.Data === "string") return decodeOption245Text(option.Data);
  if (Array.isArray(option.Data) && option.Data.every((b) => Number.isInteger(b) && b >= 0 && b <= 255)) {
    return decodeOption245Text(Buffer.from(option.Data as number[]).toString("hex"));
  }
  throw new DiscoveryParseError("malformed", "option 245 Data is neither a hex string nor a byte array");
}
