// The discovery sources that need I/O (environment, registry, files, the network), each turning what it reads into
// candidate addresses through the pure parsers. A bad input is a DiscoveryFailure value; nothing here throws.
import { readFile, readdir } from "node:fs/promises";
import { execFile } from "node:child_process";
import { basename, dirname, join } from "node:path";
import type { ImdsDiscoverySettings } from "./settings.js";
import { DiscoveryParseError, type DiscoveryFailure, type DiscoverySource } from "./failure.js";
import { parseIpv4 } from "./option245.js";
import { parseDhclientLeases } from "./lease-dhclient.js";
import { parseNetworkdLease } from "./lease-networkd.js";
import { parseNetworkManagerLease } from "./lease-networkmanager.js";
import { parseRegQueryOutput, registryKey, registryValueName } from "./registry-output.js";
import { queryOption245 } from "./dhcp-client.js";

export interface Candidate {
  source: DiscoverySource;
  address: string;
  /** The file it came from, when any. */
  file?: string;
}

export interface SourceResult {
  candidates: Candidate[];
  failures: DiscoveryFailure[];
}

export interface SourceContext {
  settings: ImdsDiscoverySettings;
  env: NodeJS.ProcessEnv;
  platform: NodeJS.Platform;
  /** Wall-clock time for lease expiry. */
  nowMs: number;
  signal?: AbortSignal;
  /** Runs `reg query` (replaceable so the parser is what tests exercise on Linux). */
  runRegQuery?: () => Promise<string>;
}

export interface DiscoverySourceReader {
  source: DiscoverySource;
  read(context: SourceContext): Promise<SourceResult>;
}

/** The sources after the link-local probe, in the order they are tried. */
export const discoverySources: readonly DiscoverySourceReader[] = [
  { source: "env", read: async ({ env }) => fromText("env", env.CLOUDCONTROLIP, undefined, (t) => parseIpv4(t)) },
  { source: "registry", read: readRegistry },
  {
    source: "waagent",
    read: async ({ settings }) => readOneFile("waagent", settings.wireServerEndpointFile, (t) => parseIpv4(t)),
  },
  {
    source: "dhclient",
    read: (c) => readLeaseFiles("dhclient", c.settings.leaseFiles.dhclient, (t) => parseDhclientLeases(t, c.nowMs)),
  },
  { source: "networkd", read: (c) => readLeaseFiles("networkd", c.settings.leaseFiles.networkd, parseNetworkdLease) },
  {
    source: "networkmanager",
    read: (c) =>
      readLeaseFiles("networkmanager", c.settings.leaseFiles.networkManager, (t) =>
        parseNetworkManagerLease(t, c.nowMs),
      ),
  },
  { source: "dhcp", read: readActiveDhcp },
];

function fromText(
  source: DiscoverySource,
  text: string | undefined,
  file: string | undefined,
  parse: (text: string) => string,
): SourceResult {
  if (text === undefined || text.trim() === "") return { candidates: [], failures: [] };
  try {
    return { candidates: [{ source, address: parse(text), file }], failures: [] };
  } catch (err) {
    return { candidates: [], failures: [toFailure(source, err, file)] };
  }
}

export function toFailure(source: DiscoverySource, err: unknown, file?: string): DiscoveryFailure {
  if (err instanceof DiscoveryParseError) return { source, reason: err.reason, detail: err.message, file };
  return { source, reason: "unreadable", detail: (err as NodeJS.ErrnoException).code ?? (err as Error).message, file };
}

async function readOneFile(
  source: DiscoverySource,
  path: string,
  parse: (text: string) => string,
): Promise<SourceResult> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    // A file that is not there is not an error: this kind of VM simply does not have it. Nor is a directory a pattern matched.
    if ((err as NodeJS.ErrnoException).code === "ENOENT" || (err as NodeJS.ErrnoException).code === "EISDIR")
      return { candidates: [], failures: [] };
    return { candidates: [], failures: [toFailure(source, err, path)] };
  }
  if (text.trim() === "")
    return { candidates: [], failures: [{ source, reason: "malformed", detail: "file is empty", file: path }] };
  return fromText(source, text, path, parse);
}

/** Files matching `dir/pattern` where `*` in the file name matches anything, in name order. A missing directory is no match. */
export async function expandPattern(pattern: string): Promise<string[]> {
  const dir = dirname(pattern);
  const name = basename(pattern);
  if (!name.includes("*")) return [pattern];
  const matcher = new RegExp(
    `^${name
      .split("*")
      .map((p) => p.replace(/[.+?^${}()|[\]\\]/g, "\\$&"))
      .join(".*")}$`,
  );
  try {
    return (await readdir(dir))
      .filter((f) => matcher.test(f))
      .sort()
      .map((f) => join(dir, f));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT" || (err as NodeJS.ErrnoException).code === "ENOTDIR")
      return [];
    throw err;
  }
}

async function readLeaseFiles(
  source: DiscoverySource,
  patterns: readonly string[],
  parse: (text: string) => string,
): Promise<SourceResult> {
  const result: SourceResult = { candidates: [], failures: [] };
  for (const pattern of patterns) {
    let files: string[];
    try {
      files = await expandPattern(pattern);
    } catch (err) {
      result.failures.push(toFailure(source, err, dirname(pattern)));
      continue;
    }
    for (const file of files) {
      const one = await readOneFile(source, file, parse);
      result.candidates.push(...one.candidates);
      result.failures.push(...one.failures);
    }
  }
  return result;
}

async function readRegistry(context: SourceContext): Promise<SourceResult> {
  if (context.platform !== "win32" && context.runRegQuery === undefined) return { candidates: [], failures: [] };
  const run = context.runRegQuery ?? runRegQuery;
  let output: string;
  try {
    output = await run();
  } catch (err) {
    // reg exits 1 when the key or value does not exist: a VM in a virtual network has none.
    if ((err as { code?: unknown }).code === 1) return { candidates: [], failures: [] };
    return { candidates: [], failures: [toFailure("registry", err)] };
  }
  return fromText("registry", output, undefined, parseRegQueryOutput);
}

function runRegQuery(): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      "reg",
      ["query", registryKey, "/v", registryValueName],
      { timeout: 5000, windowsHide: true },
      (err, stdout) => (err ? reject(err) : resolve(stdout)),
    );
  });
}

async function readActiveDhcp(context: SourceContext): Promise<SourceResult> {
  if (!context.settings.activeDhcp.enabled) return { candidates: [], failures: [] };
  const failures: DiscoveryFailure[] = [];
  try {
    const { address } = await queryOption245(
      context.settings.activeDhcp,
      (skipped) => failures.push(toFailure("dhcp", skipped)),
      context.signal,
    );
    return { candidates: [{ source: "dhcp", address }], failures };
  } catch (err) {
    return { candidates: [], failures: [...failures, toFailure("dhcp", err)] };
  }
}
