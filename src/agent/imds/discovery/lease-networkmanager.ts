// NetworkManager's own files: key files such as the device state in `/run/NetworkManager/devices/IFINDEX`
// (`[dhcp4]` section, `private_245=a8:3f:81:10`) and `internal-*.lease` files. NetworkManager's dhclient-format
// `dhclient-*.lease` files are read by the dhclient parser instead (chosen by content).
import { DiscoveryParseError } from "./failure.js";
import { decodeOption245Text } from "./option245.js";
import { parseDhclientLeases } from "./lease-dhclient.js";

const optionKeys = new Set(["private_245", "unknown_245", "option_245", "dhcp4_private_245", "dhcp4_unknown_245"]);

export function parseNetworkManagerLease(text: string, nowMs: number): string {
  if (/^\s*lease\s*\{/m.test(text)) return parseDhclientLeases(text, nowMs);
  let option: string | undefined;
  let sawKey = false;
  text.split(/\r?\n/).forEach((rawLine, index) => {
    const line = rawLine.trim();
    if (line === "" || line.startsWith("#") || line.startsWith(";") || /^\[[^\]]+\]$/.test(line)) return;
    const match = /^([A-Za-z0-9_.-]+)\s*=\s*(.*)$/.exec(line);
    if (!match) throw new DiscoveryParseError("malformed", `line ${index + 1}: expected key=value or [section]`);
    sawKey = true;
    if (optionKeys.has(match[1]!.toLowerCase())) option = match[2]!;
  });
  if (!sawKey) throw new DiscoveryParseError("malformed", "no key=value lines");
  if (option === undefined) throw new DiscoveryParseError("no-option-245", "no private_245 key");
  return decodeOption245Text(option);
}
