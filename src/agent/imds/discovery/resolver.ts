// Chooses the IMDS endpoint: an explicit URL wins; else the endpoint remembered from the last run while it answers;
// else 169.254.169.254 if it answers; else the discovery sources in order, each candidate probed before use.
import type { ImdsDiscoverySettings } from "./settings.js";
import type { DiscoveryFailure, DiscoverySource } from "./failure.js";
import type { Probe } from "./probe.js";
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
  context: Omit<SourceContext, "settings">;
  sources?: readonly DiscoverySourceReader[];
  /** Told about each failure as it happens (log and metric). */
  onFailure?: (failure: DiscoveryFailure) => void;
}

export function endpointUrl(address: string, port: number): string {
  return port === 80 ? `http://${address}` : `http://${address}:${port}`;
}

export async function resolveImdsEndpoint(request: ResolveRequest): Promise<ResolveOutcome> {
  const { settings, probe } = request;
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

  if (
    request.remembered &&
    request.remembered.source !== "explicit" &&
    (await answers("remembered", request.remembered.url))
  ) {
    return { endpoint: { url: request.remembered.url, source: request.remembered.source, reused: true }, failures };
  }
  const linkLocal = endpointUrl(settings.linkLocalAddress, settings.port);
  if (await answers("link-local", linkLocal))
    return { endpoint: { url: linkLocal, source: "link-local", reused: false }, failures };

  const tried = new Set<string>([linkLocal]);
  for (const reader of request.sources ?? discoverySources) {
    if (request.context.signal?.aborted) break;
    const result = await reader.read({ ...request.context, settings });
    result.failures.forEach(fail);
    for (const candidate of result.candidates) {
      const url = endpointUrl(candidate.address, settings.port);
      if (tried.has(url)) continue;
      tried.add(url);
      if (await answers(candidate.source, url, candidate.file))
        return { endpoint: { url, source: candidate.source, reused: false }, failures };
    }
  }
  return { failures };
}
