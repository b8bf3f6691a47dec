// Windows: `reg query HKLM\Software\CloudControl /v CloudControlIp` prints the value as
// `    CloudControlIp    REG_SZ    168.63.129.16` (REG_DWORD and REG_BINARY are read as the 4 address bytes).
import { DiscoveryParseError } from "./failure.js";
import { decodeOption245Text, parseIpv4 } from "./option245.js";

export const registryKey = "HKLM\\Software\\CloudControl";
export const registryValueName = "CloudControlIp";

/** The value's line: indented, its name, its type, then its data (all the rest of the line, stray `\r` included). */
const valueLine = new RegExp(`^\\s+${registryValueName}\\s+(REG_[A-Z_]+)(.*)`, "is");

export function parseRegQueryOutput(output: string): string {
  const match = output
    .split(/\r?\n/)
    .map((line) => valueLine.exec(line))
    .find((m): m is RegExpExecArray => m !== null);
  if (match === undefined)
    throw new DiscoveryParseError("no-option-245", `no ${registryValueName} value in the reg query output`);
  const type = match[1]!.toUpperCase();
  const value = match[2]!.trim();
  switch (type) {
    case "REG_SZ":
    case "REG_EXPAND_SZ":
      return parseIpv4(value);
    case "REG_DWORD": {
      if (!/^0x[0-9a-f]{1,8}$/i.test(value))
        throw new DiscoveryParseError("malformed", `REG_DWORD value "${value}" is not 0x…`);
      return decodeOption245Text(value.slice(2).padStart(8, "0"));
    }
    case "REG_BINARY":
      return decodeOption245Text(value);
    default:
      throw new DiscoveryParseError("malformed", `${registryValueName} has unsupported type ${type}`);
  }
}
