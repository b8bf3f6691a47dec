// The HTTP layer of `sef-testbed simulate`: a local IMDS (scheduled events, instance metadata, managed-identity tokens)
// playing a scenario timeline, plus a small test-only control API under /__sim/. This module starts the server and
// routes each request: routes/scheduled-events.ts, routes/metadata.ts, routes/control.ts; the state they share is
// sim-state.ts.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { z } from "zod";
import { listen } from "@sef/runtime/listen.js";
import { silentLogger, type Logger } from "../support/logger.js";
import { systemClock } from "@sef/runtime/clock.js";
import type { ScheduledEventsApiVersion } from "./api-versions.js";
import { HttpError, sendJson } from "./http.js";
import { checkRequest, normalizedPath } from "./imds-request.js";
import type { scenarioEventSchema, Scenario } from "./scenario-schema.js";
import { loadScenario } from "./scenarios.js";
import { Timeline } from "./timeline.js";
import {
  advance,
  countRequest,
  setEvents,
  startTimeline,
  status,
  sync,
  type RequestLogEntry,
  type SimState,
  type SimulatorClock,
  type SimStatus,
  type TokenFault,
} from "./sim-state.js";

export { requestLogLimit, type RequestLogEntry } from "./sim-state.js";
import { serveControl } from "./routes/control.js";
import { serveInstanceMetadata, serveToken } from "./routes/metadata.js";
import { serveScheduledEvents } from "./routes/scheduled-events.js";
import { defaultSimulatorHost } from "./default-host.js";

export { maxRequestBodyBytes } from "./http.js";
export { simVmHeader } from "./routes/metadata.js";
export { defaultHugeBodyBytes, defaultSlowDelaySeconds } from "./routes/scheduled-events.js";
export type { ApprovalEntry, SimStatus, TokenFault } from "./sim-state.js";

export { defaultSimulatorHost };
const tickIntervalMs = 50;

export interface SimulatorOptions {
  /** A loaded scenario, or a built-in scenario name / scenario file path. */
  scenario: Scenario | string;
  /** TCP port; default 0 (ephemeral). */
  port?: number;
  /** Bind address; default 127.0.0.1. */
  host?: string;
  /** Scenario seconds per wall-clock second; default: the scenario's `speed`. */
  speed?: number;
  /** Restart the scenario when it ends; default false. */
  loop?: boolean;
  /** When scenario time starts: at the first scheduled-events request (like IMDS enabling on first use; default) or at listen. */
  startOn?: "first-request" | "listen";
  clock?: SimulatorClock;
  logger?: Logger;
  /**
   * Test-only: hold each StartRequests POST this long before applying and answering it (the agent can be killed
   * while its approval is in flight). The POST counts in `approvalsHeld` on arrival and is applied after the delay
   * even if the client has gone, like a request IMDS already took. Default 0.
   */
  approvalDelayMs?: number;
  /** Resource tags per VM name (the scenario VM or any `X-Sef-Sim-Vm` name); VMs not listed carry the scenario VM's `tags`. */
  vmTags?: Readonly<Record<string, Readonly<Record<string, string>>>>;
  /** Test-only: the first `count` managed-identity token requests are answered `status` (a failing token endpoint). */
  tokenFault?: TokenFault;
}

export interface Simulator {
  readonly url: string;
  readonly host: string;
  readonly port: number;
  readonly scenario: Scenario;
  readonly speed: number;
  status(): SimStatus;
  /** Replaces the Events array now (new incarnation). Events use the scenario event format. */
  setEvents(events: readonly z.input<typeof scenarioEventSchema>[]): { changedAtMs: number; incarnation: number };
  /** Jumps scenario time forward. */
  advance(seconds: number): SimStatus;
  /** Test-only: the next `count` managed-identity token requests are answered `status` (replaces any fault left). */
  setTokenFault(fault: TokenFault): void;
  /** Sets the resource tags instance metadata serves for `vmName` from now on. */
  setVmTags(vmName: string, tags: Readonly<Record<string, string>>): void;
  /** Resolves when a non-looping scenario has run its duration (never for `loop`). */
  waitForEnd(): Promise<void>;
  /** The latest requests (up to `requestLogLimit`) in arrival order, on this simulator's clock; excludes /__sim/. */
  requestLog(path?: string): readonly RequestLogEntry[];
  close(): Promise<void>;
}

/** A simulator's state before its first request: the scenario loaded, nothing counted, no fault on tokens unless asked. */
function initialState(options: SimulatorOptions, endResolve: (() => void) | null): SimState {
  const scenario = typeof options.scenario === "string" ? loadScenario(options.scenario) : options.scenario;
  return {
    scenario,
    clock: options.clock ?? systemClock,
    logger: options.logger ?? silentLogger(),
    timeline: new Timeline(scenario, { speed: options.speed, loop: options.loop }),
    vmTags: new Map<string, Readonly<Record<string, string>>>(Object.entries(options.vmTags ?? {})),
    requestCounts: {},
    requestLog: [],
    faultsServed: {},
    approvals: [],
    approvalCounts: new Map(),
    lifetime: new AbortController(),
    approvalDelayMs: options.approvalDelayMs ?? 0,
    approvalsHeld: 0,
    malformedRotation: 0,
    tokenFault: { ...(options.tokenFault ?? { count: 0, status: 503 }) },
    hugeCache: null,
    endResolve,
  };
}

/** Starts the simulated IMDS; resolves once it listens. */
export async function startSimulator(options: SimulatorOptions): Promise<Simulator> {
  let endResolve: (() => void) | null = null;
  const endPromise = new Promise<void>((resolve) => {
    endResolve = resolve;
  });
  const state = initialState(options, endResolve);
  const { clock, logger, scenario, timeline } = state;

  const server = createServer((req, res) => {
    const path = normalizedPath(req.url ?? "/");
    const counted = !path.startsWith("/__sim/");
    const arrivedAtMs = clock.now();
    res.on("error", () => undefined);
    handle(state, req, res).then(
      (statusLabel) => {
        if (counted) countRequest(state, path, statusLabel, arrivedAtMs);
        logger.debug({ method: req.method, path, status: statusLabel }, "request");
      },
      (err: unknown) => {
        const httpError = err instanceof HttpError ? err : new HttpError(500, { error: "Internal server error" });
        if (!(err instanceof HttpError)) logger.error({ err }, "request failed");
        if (!res.headersSent && !res.destroyed) sendJson(res, httpError.status, httpError.body);
        if (counted) countRequest(state, path, String(httpError.status), arrivedAtMs);
      },
    );
  });
  server.keepAliveTimeout = 5000;

  const host = options.host ?? defaultSimulatorHost;
  const port = await listen(server, options.port ?? 0, host);
  if (options.startOn === "listen") startTimeline(state, clock.now());
  const tick = setInterval(() => sync(state, clock.now()), tickIntervalMs);
  tick.unref();
  const url = `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
  logger.info({ url, scenario: scenario.name, speed: timeline.speed, loop: timeline.loop }, "simulator listening");

  let closing: Promise<void> | null = null;
  return {
    url,
    host,
    port,
    scenario,
    speed: timeline.speed,
    status: () => status(state),
    setEvents: (events) => setEvents(state, events),
    advance: (seconds) => advance(state, seconds),
    setVmTags: (vmName, tags) => void state.vmTags.set(vmName, { ...tags }),
    setTokenFault: (fault) => void (state.tokenFault = { ...fault }),
    waitForEnd: () => endPromise,
    requestLog: (path) =>
      path === undefined ? [...state.requestLog] : state.requestLog.filter((r) => r.path === path),
    close: () => {
      closing ??= new Promise<void>((resolve) => {
        clearInterval(tick);
        state.lifetime.abort(new Error("simulator closed"));
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

/** Checks a request as IMDS does, then hands it to its route; resolves with the status label it was answered with. */
async function handle(state: SimState, req: IncomingMessage, res: ServerResponse): Promise<string> {
  const nowMs = state.clock.now();
  const checked = checkRequest(req.method ?? "GET", req.url ?? "/", req.headers);
  if (!checked.ok) {
    sendJson(res, checked.status, checked.body, checked.headers);
    return String(checked.status);
  }
  if (checked.kind === "sim") return serveControl(state, req, res, checked.route);
  switch (checked.route) {
    case "scheduledevents":
      return serveScheduledEvents(state, req, res, checked.apiVersion as ScheduledEventsApiVersion, nowMs);
    case "compute":
    case "instance":
      return serveInstanceMetadata(state, req, res, checked.route);
    case "token":
      return serveToken(state, res, checked.query, nowMs);
  }
}
