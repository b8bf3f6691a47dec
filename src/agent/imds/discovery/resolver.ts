// Chooses the IMDS endpoint: an explicit URL wins; else 169.254.169.254 if it answers, every time; else the endpoint
// remembered from the last run, else the discovery sources in order, each trusted only once it answers the Scheduled
// Events API with a well-formed document. Says which endpoints may be remembered (Azure's addresses).
import type { ImdsDiscoverySettings } from "./settings.js";
import type { DiscoveryFailure, DiscoverySource } from "./failure.js";
import type { Probe } from "./probe.js";
import { scheduledEventsVerify, type Verify } from "./verify.js";
import { discoverySources, type DiscoverySourceReader, type SourceContext } from "./sources.js";

export interface ResolvedEndpoint {
  /** Base URL for the IMDS client, e.g. `http://169.254.169.254`. */
  url: string;
  source: DiscoverySource;
  /** True when a remembered endpoint was reused (source is where it was first found). */
  reused: boolean;
}

export interface ResolveOutcome {
  endpoint?: ResolvedEndpoint;
  failures: DiscoveryFailure[];
}

export interface ResolveRequest {
  explicitUrl?: string;
  remembered?: { url: string; source: DiscoverySource };
  settings: ImdsDiscoverySettings;
  probe: Probe;
  /** Asks a candidate for a Scheduled Events document (default: `scheduledEventsVerify`). */
  verify?: Verify;
  /** The Scheduled Events api-version the verification asks for (default `2020-07-01`). */
  apiVersion?: string;
  context: Omit<SourceContext, "settings">;
  sources?: readonly DiscoverySourceReader[];
  /** Told about each failure as it happens (log and metric). */
  onFailure?: (failure: DiscoveryFailure) => void;
}

export function endpointUrl(address: string, port: number): string {
  return port === 80 ? `http://${address}` : `http://${address}:${port}`;
}

/** Whether `url` is at an address that may be remembered across restarts (`imdsDiscovery.rememberAddresses`). */
export function rememberable(url: string, settings: ImdsDiscoverySettings): boolean {
  try {
    return settings.rememberAddresses.includes(new URL(url).hostname);
  } catch {
    return false;
  }
}

export async function resolveImdsEndpoint(request: ResolveRequest): Promise<ResolveOutcome> {
  const { settings, probe } = request;
  const verify = request.verify ?? scheduledEventsVerify;
  const failures: DiscoveryFailure[] = [];
  const fail = (failure: DiscoveryFailure): void => {
    failures.push(failure);
    request.onFailure?.(failure);
  };
  if (request.explicitUrl !== undefined)
    return { endpoint: { url: request.explicitUrl, source: "explicit", reused: false }, failures };

  const answers = async (source: DiscoverySource, url: string, file?: string): Promise<boolean> => {
    const parsed = new URL(url);
    const port = parsed.port === "" ? 80 : Number(parsed.port);
    const result = await probe(parsed.hostname, port, settings.probeTimeoutMs, request.context.signal);
    if (!result.answered) fail({ source, reason: "not-answering", detail: `${parsed.host}: ${result.detail}`, file });
    return result.answered;
  };
  /** A candidate that is not the link-local address: it must accept a connection, then answer as IMDS does. */
  const trusted = async (source: DiscoverySource, url: string, file?: string): Promise<boolean> => {
    if (!(await answers(source, url, file))) return false;
    const apiVersion = request.apiVersion ?? "2020-07-01";
    const result = await verify(url, apiVersion, settings.verifyTimeoutMs, request.context.signal);
    if (!result.answered) fail({ source, reason: "not-imds", detail: `${new URL(url).host}: ${result.detail}`, file });
    return result.answered;
  };

  const linkLocal = endpointUrl(settings.linkLocalAddress, settings.port);
  if (await answers("link-local", linkLocal))
    return { endpoint: { url: linkLocal, source: "link-local", reused: false }, failures };
  const tried = new Set<string>([linkLocal]);
  const remembered = request.remembered;
  if (remembered && remembered.source !== "explicit" && !tried.has(remembered.url)) {
    tried.add(remembered.url);
    if (await trusted("remembered", remembered.url))
      return { endpoint: { url: remembered.url, source: remembered.source, reused: true }, failures };
  }

  for (const reader of request.sources ?? discoverySources) {
    if (request.context.signal?.aborted) break;
    const result = await reader.read({ ...request.context, settings });
    result.failures.forEach(fail);
    for (const candidate of result.candidates) {
      const url = endpointUrl(candidate.address, settings.port);
      if (tried.has(url)) continue;
      tried.add(url);
      if (await trusted(candidate.source, url, candidate.file))
        return { endpoint: { url, source: candidate.source, reused: false }, failures };
    }
  }
  return { failures };
}
