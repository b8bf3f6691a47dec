// The local Kubernetes API peer: an HTTPS server on 127.0.0.1 (self-signed CA, bearer token like in-cluster) that
// answers the API requests kubectl and @kubernetes/client-node make for nodes, pods, evictions, budgets, events and
// Leases (or a fault rule's answer instead), with API Priority and Fairness's headers; start it with
// startKubernetesPeer, seed, fault and inspect it through `state` (or /__peer/), and close it with a deadline.
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import type { IncomingMessage, ServerResponse } from "node:http";
import { createServer, type Server } from "node:https";
import type { TLSSocket } from "node:tls";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Logger } from "pino";
import { listen } from "@sef/runtime/listen.js";
import { silentLogger } from "../../support/logger.js";
import type { ApiRequest, ApiResponse, Cluster } from "./api.js";
import { DisruptionBudgets } from "./budgets.js";
import { controlAnswer, isControlPath } from "./control.js";
import { apfHeaders, faultResponse } from "./fault-answers.js";
import { FaultRules, type FaultAnswer } from "./faults.js";
import { parseBody, readBody, send } from "./http-io.js";
import { writeKubeconfig } from "./kubeconfig.js";
import { PeerLog } from "./peer-log.js";
import { PodTerminator } from "./pod-lifecycle.js";
import { requestInfoOf, type RequestInfo } from "./request-info.js";
import { discoveryAnswer, route } from "./router.js";
import { parseResourcePath } from "./resource-path.js";
import type { KubernetesSeed } from "./seed.js";
import { KubernetesPeerState } from "./state.js";
import { failure, pathNotFound, StatusError, unauthorizedStatus } from "./status.js";
import { ClusterStore, systemClock, type StoreClock } from "./store.js";
import { generateBearerToken, generatePeerTlsIdentity, hasBearerToken } from "./tls.js";
import { streamWatch } from "./watch.js";

export { maxRequestBodyBytes } from "./http-io.js";
export const defaultCloseDeadlineMs = 5_000;
/** Where a pod finds its service-account credentials (under the peer's `inCluster.pathPrefix` here). */
export const serviceAccountPath = "var/run/secrets/kubernetes.io/serviceaccount";

export interface KubernetesPeerOptions {
  /** Listen address (default 127.0.0.1). */
  readonly host?: string;
  /** TCP port (default 0: any free port). */
  readonly port?: number;
  /** Bearer token clients must send (default: a random one; `setToken` replaces it). */
  readonly token?: string;
  /** Also accept a client certificate signed by the peer's CA instead of the token (mutual TLS; `clientCertificate`). */
  readonly clientCertificates?: boolean;
  /** Namespace written to the in-cluster `namespace` file (default "default"). */
  readonly serviceAccountNamespace?: string;
  /** Where to write the kubeconfig (default: kubeconfig in a fresh temp dir, removed on close). */
  readonly kubeconfigPath?: string;
  /** Objects to start with. */
  readonly seed?: KubernetesSeed;
  /** Wall clock for object timestamps, monotonic clock for budget blocks (default: the system's). */
  readonly clock?: StoreClock;
  readonly logger?: Logger;
}

export interface KubernetesPeer {
  /** https://127.0.0.1:<port> */
  readonly url: string;
  /** The CA (the self-signed server certificate) clients must trust, PEM. */
  readonly caPem: string;
  /** The CA written to a file: `<inCluster.pathPrefix>/var/run/secrets/kubernetes.io/serviceaccount/ca.crt`. */
  readonly caFile: string;
  /** The bearer token accepted now. */
  readonly token: string;
  /** Accepts `token` from now on and refuses the one before (401): a rotated service-account token. Files are not rewritten. */
  setToken(token: string): void;
  /** With `clientCertificates`: a client certificate (and key, PEM) the peer accepts in place of the token. */
  readonly clientCertificate?: { readonly certPem: string; readonly keyPem: string };
  /** The token written to a file: `.../serviceaccount/token` beside `caFile` (and `namespace`). */
  readonly tokenFile: string;
  /**
   * In-cluster credentials as a pod sees them: the service-account files under `pathPrefix` (client-node's
   * `loadFromCluster(pathPrefix)`) and the environment that names the API server.
   */
  readonly inCluster: {
    readonly pathPrefix: string;
    readonly env: { readonly KUBERNETES_SERVICE_HOST: string; readonly KUBERNETES_SERVICE_PORT: string };
  };
  /** A kubeconfig with the CA and the bearer token (current context `sef-testbed`, namespace default). */
  readonly kubeconfigPath: string;
  readonly state: KubernetesPeerState;
  /** Stops listening, ends watches and connections (forcibly after `deadlineMs`), cancels pending pod removals and
   * returns; a second call waits for the first. */
  close(deadlineMs?: number): Promise<void>;
}

async function answer(
  request: IncomingMessage,
  url: URL,
  cluster: Cluster,
  serverAddress: string,
): Promise<ApiResponse> {
  const method = request.method ?? "GET";
  const discovery = discoveryAnswer(method, url.pathname, serverAddress);
  if (discovery) return discovery;
  const target = parseResourcePath(url.pathname);
  if (!target) throw pathNotFound();
  const apiRequest: ApiRequest = {
    ...target,
    method,
    query: url.searchParams,
    body: parseBody(await readBody(request), method, request.headers["content-type"]),
    ...(request.headers["content-type"] ? { contentType: request.headers["content-type"] } : {}),
    accept: request.headers.accept ?? "application/json",
  };
  return route(apiRequest, cluster);
}

/** The API's answer, or the Status of the error it failed with. */
async function apiAnswer(
  request: IncomingMessage,
  url: URL,
  cluster: Cluster,
  serverAddress: string,
): Promise<ApiResponse> {
  try {
    return await answer(request, url, cluster, serverAddress);
  } catch (error) {
    if (error instanceof StatusError) return { code: error.status.code, body: error.status };
    cluster.logger.error({ err: error, path: url.pathname }, "kubernetes peer handler failed");
    return {
      code: 500,
      body: failure(500, "InternalError", "Internal error occurred: the peer failed to handle the request"),
    };
  }
}

/** A fault rule's answer instead of the API's (the body is left unread); evictions it answers go to the eviction log. */
function faultAnswer(
  request: IncomingMessage,
  cluster: Cluster,
  info: RequestInfo,
  fault: { id: string; answer: FaultAnswer },
): ApiResponse {
  request.resume();
  const result = faultResponse(fault.answer, info);
  if (info.resource === "pods/eviction" && info.verb === "create") {
    const namespace = info.namespace ?? "default";
    const nodeName = (cluster.store.get("pods", namespace, info.name ?? "")?.spec as { nodeName?: string } | undefined)
      ?.nodeName;
    const outcome = fault.answer.kind === "throttle" ? "throttled" : "refused";
    cluster.log.eviction({
      namespace,
      pod: info.name ?? "",
      ...(nodeName ? { nodeName } : {}),
      outcome,
      code: result.code,
      fault: fault.id,
    });
  }
  return result;
}

/** A bearer token the peer accepts now, or a verified client certificate (when the peer asks for one). */
function authenticated(request: IncomingMessage, token: string): boolean {
  return hasBearerToken(request.headers.authorization, token) || (request.socket as TLSSocket).authorized === true;
}

interface HandlerContext {
  readonly cluster: Cluster;
  /** The token accepted now (`setToken` replaces it). */
  readonly token: () => string;
  readonly serverAddress: () => string;
  readonly watches: Set<() => void>;
  readonly control: (request: IncomingMessage, url: URL) => Promise<ApiResponse>;
}

function requestHandler(context: HandlerContext) {
  const { cluster, token, watches } = context;
  return async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const url = new URL(request.url ?? "/", "https://peer.invalid");
    const method = request.method ?? "GET";
    if (!authenticated(request, token())) {
      request.resume();
      send(response, { code: 401, body: unauthorizedStatus }, {});
      if (!isControlPath(url.pathname))
        logRequest(cluster, request, url, requestInfoOf(method, url.pathname, url.searchParams), 401);
      return;
    }
    if (isControlPath(url.pathname)) {
      send(response, await context.control(request, url), {});
      return;
    }
    const info = requestInfoOf(method, url.pathname, url.searchParams);
    const fault = cluster.faults.take(info);
    const result = fault
      ? faultAnswer(request, cluster, info, fault)
      : await apiAnswer(request, url, cluster, context.serverAddress());
    logRequest(cluster, request, url, info, result.code, fault?.id);
    if (!result.watch) {
      send(response, result, apfHeaders);
      return;
    }
    for (const [name, value] of Object.entries(apfHeaders)) response.setHeader(name, value);
    const end = streamWatch(response, cluster.store, result.watch);
    watches.add(end);
    response.on("close", () => watches.delete(end));
  };
}

function logRequest(
  cluster: Cluster,
  request: IncomingMessage,
  url: URL,
  info: RequestInfo,
  code: number,
  fault?: string,
): void {
  cluster.log.request({
    method: request.method ?? "GET",
    path: url.pathname + url.search,
    code,
    ...(request.headers["content-type"] ? { contentType: request.headers["content-type"] } : {}),
    ...(request.headers["user-agent"] ? { userAgent: request.headers["user-agent"] } : {}),
    verb: info.verb,
    ...(info.resource !== undefined ? { resource: info.resource } : {}),
    ...(info.namespace !== undefined ? { namespace: info.namespace } : {}),
    ...(info.name !== undefined ? { name: info.name } : {}),
    ...(fault ? { fault } : {}),
  });
}

async function closeServer(server: Server, deadlineMs: number): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<void>((resolve) => {
    timer = setTimeout(() => {
      server.closeAllConnections();
      resolve();
    }, deadlineMs);
  });
  await Promise.race([closed, deadline]);
  clearTimeout(timer);
  server.closeAllConnections();
  await closed;
}

/** The control surface's answer: the body read as JSON (400 when it is not). */
async function controlResponse(state: KubernetesPeerState, request: IncomingMessage, url: URL): Promise<ApiResponse> {
  let body: unknown;
  try {
    const raw = await readBody(request);
    body = raw.length > 0 ? (JSON.parse(raw.toString("utf8")) as unknown) : undefined;
  } catch (error) {
    return {
      code: 400,
      body: {
        error: `the body is not JSON within the size limit: ${error instanceof Error ? error.message : String(error)}`,
      },
    };
  }
  return controlAnswer(state, request.method ?? "GET", url.pathname, body);
}

export async function startKubernetesPeer(options: KubernetesPeerOptions = {}): Promise<KubernetesPeer> {
  const logger = options.logger ?? silentLogger();
  const store = new ClusterStore(options.clock ?? systemClock);
  const log = new PeerLog(store.clock);
  const faults = new FaultRules(() => store.clock.monotonicNowMs());
  const cluster: Cluster = {
    store,
    budgets: new DisruptionBudgets(store),
    terminator: new PodTerminator(store),
    faults,
    log,
    logger,
    evictionRaces: new Map(),
  };
  const watches = new Set<() => void>();
  const peerState = new KubernetesPeerState(cluster);
  if (options.seed) peerState.seed(options.seed);
  let token = options.token ?? generateBearerToken();
  const identity = await generatePeerTlsIdentity(7, options.clientCertificates === true);
  const host = options.host ?? "127.0.0.1";
  let serverAddress = "";
  const handler = requestHandler({
    cluster,
    token: () => token,
    serverAddress: () => serverAddress,
    watches,
    control: (request, url) => controlResponse(peerState, request, url),
  });
  const mutualTls =
    options.clientCertificates === true ? { requestCert: true, rejectUnauthorized: false, ca: [identity.certPem] } : {};
  const server = createServer(
    { key: identity.keyPem, cert: identity.certPem, requestTimeout: 60_000, ...mutualTls },
    (request, response) => {
      void handler(request, response);
    },
  );
  const port = await listen(server, options.port ?? 0, host);
  serverAddress = `${host.includes(":") ? `[${host}]` : host}:${port}`;
  const url = `https://${serverAddress}`;
  const dir = await mkdtemp(join(tmpdir(), "sef-kubernetes-"));
  const serviceAccountDir = join(dir, serviceAccountPath);
  await mkdir(serviceAccountDir, { recursive: true });
  const caFile = join(serviceAccountDir, "ca.crt");
  const tokenFile = join(serviceAccountDir, "token");
  const kubeconfigPath = options.kubeconfigPath ?? join(dir, "kubeconfig");
  await writeFile(caFile, identity.certPem, { mode: 0o644 });
  await writeFile(tokenFile, token, { mode: 0o600 });
  await writeFile(join(serviceAccountDir, "namespace"), options.serviceAccountNamespace ?? "default", { mode: 0o644 });
  await writeKubeconfig(kubeconfigPath, url, identity.certPem, token);
  logger.info({ url, kubeconfigPath }, "kubernetes peer listening");
  let closing: Promise<void> | undefined;
  return {
    url,
    caPem: identity.certPem,
    caFile,
    get token() {
      return token;
    },
    setToken(next: string) {
      token = next;
    },
    ...(identity.client ? { clientCertificate: identity.client } : {}),
    tokenFile,
    inCluster: { pathPrefix: dir, env: { KUBERNETES_SERVICE_HOST: host, KUBERNETES_SERVICE_PORT: String(port) } },
    kubeconfigPath,
    state: peerState,
    close: (deadlineMs = defaultCloseDeadlineMs) => {
      closing ??= (async () => {
        cluster.terminator.close();
        peerState.close();
        for (const end of [...watches]) end();
        await closeServer(server, deadlineMs);
        await rm(dir, { recursive: true, force: true });
      })();
      return closing;
    },
  };
}
