// Where the agent keeps its state when the config names no `dataDir`: the Linux packages' state directory, and on
// Windows the folder the MSI and install.ps1 create under ProgramData (not `C:\var\lib\sef`).
import { win32 } from "node:path";

export function platformDataDir(
  platform: NodeJS.Platform = process.platform,
  env: NodeJS.ProcessEnv = process.env,
): string {
  if (platform !== "win32") return "/var/lib/sef";
  return win32.join(env["ProgramData"] ?? env["PROGRAMDATA"] ?? "C:\\ProgramData", "sef", "data");
}
