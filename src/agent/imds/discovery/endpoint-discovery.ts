// Owns the IMDS endpoint the agent uses: resolves it at start, remembers it in the store, retries with backoff while
// nothing is found (@sef/retry's loop; the agent stays up, not ready, saying why), and discovers again after repeated
// connection failures.
import type { Logger } from "pino";
import { retryAttempts } from "@sef/retry/retry.js";
import { Counter, Gauge, type Registry } from "../../observability/prom-client.js";
import type { Clock } from "@sef/runtime/clock.js";
import type { ImdsEndpointSource } from "../client.js";
import type { ImdsDiscoverySettings } from "./settings.js";
import { discoveredSources, discoveryFailureReasons, type DiscoveryFailure, type DiscoverySource } from "./failure.js";
import { tcpProbe, type Probe } from "./probe.js";
import { rememberable, resolveImdsEndpoint, type ResolvedEndpoint } from "./resolver.js";
import type { Verify } from "./verify.js";
import type { DiscoverySourceReader, SourceContext } from "./sources.js";

export interface RememberedEndpoint {
  url: string;
  source: DiscoverySource;
}

/** Where the chosen endpoint survives a restart (the store's meta table). */
export interface EndpointMemory {
  load(): RememberedEndpoint | undefined;
  save(endpoint: RememberedEndpoint): void;
}

export interface EndpointDiscoveryOptions {
  explicitUrl?: string;
  settings: ImdsDiscoverySettings;
  clock: Clock;
  logger: Logger;
  /** The agent's metrics registry: `sef_imds_endpoint_info` and `sef_imds_discovery_errors_total` go there. */
  registry?: Registry;
  probe?: Probe;
  verify?: Verify;
  /** The Scheduled Events api-version a candidate is verified with (the agent's `apiVersion`). */
  apiVersion?: string;
  env?: NodeJS.ProcessEnv;
  platform?: NodeJS.Platform;
  sources?: readonly DiscoverySourceReader[];
  runRegQuery?: SourceContext["runRegQuery"];
  /** Picks the backoff's jitter, in [0, 1) (default Math.random). */
  random?: () => number;
}

/** What /readyz and the logs show. */
export interface EndpointSnapshot {
  url: string | null;
  source: DiscoverySource | null;
  reused: boolean;
  /** Why there is no endpoint (null once one is known). */
  error: string | null;
}

export class EndpointDiscovery implements ImdsEndpointSource {
  private endpoint: ResolvedEndpoint | undefined;
  private error: string | null = "IMDS endpoint discovery has not run yet";
  private memory: EndpointMemory | undefined;
  private consecutiveConnectionFailures = 0;
  private round: Promise<void> | undefined;
  private retryLoop: Promise<void> | undefined;
  private lastFailureSummary = "";
  private readonly stopController = new AbortController();
  private readonly info: Gauge<"source" | "endpoint"> | undefined;
  private readonly errors: Counter<"source" | "reason"> | undefined;

  constructor(private readonly options: EndpointDiscoveryOptions) {
    if (options.registry) {
      this.info = new Gauge({
        name: "sef_imds_endpoint_info",
        help: "The IMDS endpoint in use (value 1) and the discovery source that found it",
        labelNames: ["source", "endpoint"] as const,
        registers: [options.registry],
      });
      this.errors = new Counter({
        name: "sef_imds_discovery_errors_total",
        help: "IMDS endpoint discovery failures, by source and reason",
        labelNames: ["source", "reason"] as const,
        registers: [options.registry],
      });
      for (const source of discoveredSources)
        for (const reason of discoveryFailureReasons) this.errors.inc({ source, reason }, 0);
    }
  }

  /** One resolution round now; if it finds nothing, keeps trying in the background with backoff. Never throws. */
  async start(memory?: EndpointMemory): Promise<void> {
    this.memory = memory;
    await new Promise<void>((firstRoundDone) => this.startRetryLoop(firstRoundDone));
  }

  current(): { url: string } | { error: string } {
    return this.endpoint ? { url: this.endpoint.url } : { error: this.error ?? "IMDS endpoint unknown" };
  }

  snapshot(): EndpointSnapshot {
    return {
      url: this.endpoint?.url ?? null,
      source: this.endpoint?.source ?? null,
      reused: this.endpoint?.reused ?? false,
      error: this.endpoint ? null : this.error,
    };
  }

  /** The IMDS client could not connect; after `rediscoverAfterFailures` in a row, discovery runs again. */
  connectionFailed(): void {
    if (this.endpoint?.source === "explicit" || this.options.settings.rediscoverAfterFailures === 0) return;
    this.consecutiveConnectionFailures += 1;
    if (
      this.consecutiveConnectionFailures < this.options.settings.rediscoverAfterFailures ||
      this.round ||
      this.retryLoop
    )
      return;
    this.options.logger.warn(
      { endpoint: this.endpoint?.url, connectionFailures: this.consecutiveConnectionFailures },
      "IMDS endpoint keeps refusing connections; discovering it again",
    );
    this.consecutiveConnectionFailures = 0;
    void this.runRound("rediscover");
  }

  answered(): void {
    this.consecutiveConnectionFailures = 0;
  }

  async stop(): Promise<void> {
    this.stopController.abort(new Error("stopping"));
    await Promise.all([this.round, this.retryLoop].map((p) => p?.catch(() => undefined)));
  }

  private runRound(why: "start" | "retry" | "rediscover"): Promise<void> {
    this.round ??= this.resolveOnce(why).finally(() => {
      this.round = undefined;
    });
    return this.round;
  }

  private async resolveOnce(why: "start" | "retry" | "rediscover"): Promise<void> {
    try {
      await this.resolveAndApply(why);
    } catch (err) {
      // A bug, not an input problem: say so, and let the retry loop (or the next rediscovery) try again.
      this.options.logger.error({ err, why }, "IMDS endpoint discovery failed unexpectedly");
      if (!this.endpoint) this.error = `IMDS endpoint discovery failed unexpectedly: ${(err as Error).message}`;
    }
  }

  private async resolveAndApply(why: "start" | "retry" | "rediscover"): Promise<void> {
    const { settings, logger, clock } = this.options;
    const failures: DiscoveryFailure[] = [];
    const remembered = this.endpoint ? { url: this.endpoint.url, source: this.endpoint.source } : this.loadMemory();
    const outcome = await resolveImdsEndpoint({
      explicitUrl: this.options.explicitUrl,
      remembered,
      settings,
      probe: this.options.probe ?? tcpProbe,
      ...(this.options.verify ? { verify: this.options.verify } : {}),
      ...(this.options.apiVersion ? { apiVersion: this.options.apiVersion } : {}),
      sources: this.options.sources,
      context: {
        env: this.options.env ?? process.env,
        platform: this.options.platform ?? process.platform,
        nowMs: clock.now(),
        signal: this.stopController.signal,
        runRegQuery: this.options.runRegQuery,
      },
      onFailure: (failure) => {
        failures.push(failure);
        this.errors?.inc({ source: failure.source, reason: failure.reason });
      },
    });
    if (this.stopController.signal.aborted) return;
    // Name each failure in the log; a retry round that fails exactly as the last one did logs at debug level.
    const summary = failures.map((f) => `${f.source}: ${f.reason}${f.file ? ` (${f.file})` : ""}`).join("; ");
    const level = summary === this.lastFailureSummary ? "debug" : "warn";
    this.lastFailureSummary = summary;
    for (const f of failures)
      logger[level](
        { source: f.source, reason: f.reason, file: f.file, detail: f.detail },
        `IMDS endpoint discovery: ${f.source} ${f.reason}`,
      );

    if (outcome.endpoint) {
      const changed = outcome.endpoint.url !== this.endpoint?.url;
      this.endpoint = outcome.endpoint;
      this.error = null;
      if (changed || why === "start") {
        logger.info(
          { endpoint: outcome.endpoint.url, source: outcome.endpoint.source, reused: outcome.endpoint.reused, why },
          "IMDS endpoint chosen",
        );
        this.info?.reset();
        this.info?.set({ source: outcome.endpoint.source, endpoint: outcome.endpoint.url }, 1);
      }
      if (outcome.endpoint.source !== "explicit" && rememberable(outcome.endpoint.url, settings))
        this.saveMemory({ url: outcome.endpoint.url, source: outcome.endpoint.source });
      return;
    }
    if (this.endpoint) {
      logger.warn(
        { endpoint: this.endpoint.url, failures: summary },
        "IMDS endpoint discovery found nothing better; keeping the current endpoint",
      );
      return;
    }
    this.error = `no IMDS endpoint found (${summary || "no source had an address"})`;
    logger[level]({ failures: summary }, "IMDS endpoint discovery found nothing; retrying with backoff");
  }

  /** Rounds until one finds an endpoint (the first is the start round: `firstRoundDone` hears of its end) or stop. */
  private startRetryLoop(firstRoundDone: () => void): void {
    const { settings, clock } = this.options;
    this.retryLoop = retryAttempts(
      async (attempt) => {
        await this.runRound(attempt === 1 ? "start" : "retry");
        if (attempt === 1) firstRoundDone();
      },
      {
        policy: { initialDelayMs: settings.retryInitialDelayMs, maxDelayMs: settings.retryMaxDelayMs, multiplier: 2 },
        clock,
        signal: this.stopController.signal,
        verdict: () => (this.endpoint ? { retry: false } : { retry: true }),
        random: this.options.random,
      },
    )
      .then(() => undefined)
      .finally(() => {
        firstRoundDone(); // stopped before the start round
        this.retryLoop = undefined;
      });
  }

  /**
   * The remembered endpoint, if it is well-formed, on the configured port and at an address that may be remembered
   * (a changed config wins; an older agent may have remembered any address).
   */
  private loadMemory(): RememberedEndpoint | undefined {
    let remembered: RememberedEndpoint | undefined;
    try {
      remembered = this.memory?.load();
    } catch (err) {
      this.options.logger.warn({ err }, "could not read the remembered IMDS endpoint");
      return undefined;
    }
    if (remembered === undefined) return undefined;
    try {
      const url = new URL(remembered.url);
      const port = url.port === "" ? 80 : Number(url.port);
      if (
        url.protocol === "http:" &&
        port === this.options.settings.port &&
        typeof remembered.source === "string" &&
        rememberable(remembered.url, this.options.settings)
      )
        return remembered;
    } catch {
      // fall through: not a URL
    }
    this.options.logger.info(
      { remembered },
      "ignoring the remembered IMDS endpoint (malformed, another port than configured, or an address not to remember)",
    );
    return undefined;
  }

  private saveMemory(endpoint: RememberedEndpoint): void {
    try {
      this.memory?.save(endpoint);
    } catch (err) {
      this.options.logger.warn({ err }, "could not remember the IMDS endpoint");
    }
  }
}
