// The local Kubernetes API peer: an HTTPS server on 127.0.0.1 (self-signed CA, bearer token like in-cluster) that
// answers the API requests kubectl and @kubernetes/client-node make for nodes, pods, evictions, budgets and events;
// start it with startKubernetesPeer, seed and inspect it through `state`, and close it with a deadline.
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import type { IncomingMessage, ServerResponse } from "node:http";
import { createServer, type Server } from "node:https";
import type { TLSSocket } from "node:tls";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Logger } from "pino";
import { listen } from "../../support/listen.js";
import { silentLogger } from "../../support/logger.js";
import type { ApiRequest, ApiResponse, Cluster } from "./api.js";
import { DisruptionBudgets } from "./budgets.js";
import { writeKubeconfig } from "./kubeconfig.js";
import { PodTerminator } from "./pod-lifecycle.js";
import { discoveryAnswer, parseResourcePath, route } from "./router.js";
import type { KubernetesSeed } from "./seed.js";
import { KubernetesPeerState, type RequestRecord } from "./state.js";
import { decodeDeleteOptions, protobufMediaType } from "./protobuf.js";
import { badRequest, failure, pathNotFound, StatusError, unauthorizedStatus, unsupportedMediaType } from "./status.js";
import { ClusterStore, systemClock, type StoreClock } from "./store.js";
import { generateBearerToken, generatePeerTlsIdentity, hasBearerToken } from "./tls.js";
import { streamWatch } from "./watch.js";

/** The API server's own limit on a request body (3 MiB). */
export const maxRequestBodyBytes = 3 * 1024 * 1024;
export const defaultCloseDeadlineMs = 5_000;
/** Requests the log keeps (the oldest go first), so a long-running peer stays small. */
export const requestLogLimit = 10_000;
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
  readonly inCluster: { readonly pathPrefix: string; readonly env: { readonly KUBERNETES_SERVICE_HOST: string; readonly KUBERNETES_SERVICE_PORT: string } };
  /** A kubeconfig with the CA and the bearer token (current context `sef-testbed`, namespace default). */
  readonly kubeconfigPath: string;
  readonly state: KubernetesPeerState;
  /** Stops listening, ends watches and connections (forcibly after `deadlineMs`), cancels pending pod removals. */
  close(deadlineMs?: number): Promise<void>;
}

async function readBody(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxRequestBodyBytes) throw new StatusError(failure(413, "RequestEntityTooLarge", "the request body is too large"));
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** JSON bodies, and the protobuf DeleteOptions of a DELETE; other media types are a 415. */
function parseBody(body: Buffer, method: string, contentType: string | undefined): unknown {
  if (body.length === 0) return undefined;
  const media = (contentType ?? "application/json").split(";")[0]?.trim().toLowerCase() ?? "";
  if (media === protobufMediaType && method === "DELETE") return decodeDeleteOptions(body);
  if (method === "PATCH" ? !media.endsWith("+json") : media !== "application/json") throw unsupportedMediaType(method === "PATCH");
  try {
    return JSON.parse(body.toString("utf8"));
  } catch (_error) {
    throw badRequest("the request body is not valid JSON");
  }
}

async function answer(request: IncomingMessage, url: URL, cluster: Cluster, serverAddress: string): Promise<ApiResponse> {
  const discovery = discoveryAnswer(request.method ?? "GET", url.pathname, serverAddress);
  if (discovery) return discovery;
  const target = parseResourcePath(url.pathname);
  if (!target) throw pathNotFound();
  const apiRequest: ApiRequest = {
    ...target,
    method: request.method ?? "GET",
    query: url.searchParams,
    body: parseBody(await readBody(request), request.method ?? "GET", request.headers["content-type"]),
    ...(request.headers["content-type"] ? { contentType: request.headers["content-type"] } : {}),
    accept: request.headers.accept ?? "application/json",
  };
  return route(apiRequest, cluster);
}

function send(response: ServerResponse, result: ApiResponse): void {
  const body = typeof result.body === "string" ? result.body : JSON.stringify(result.body);
  response.writeHead(result.code, { "content-type": typeof result.body === "string" ? "text/plain; charset=utf-8" : "application/json", "cache-control": "no-cache, private" });
  response.end(body);
}

/** A bearer token the peer accepts now, or a verified client certificate (when the peer asks for one). */
function authenticated(request: IncomingMessage, token: string): boolean {
  return hasBearerToken(request.headers.authorization, token) || (request.socket as TLSSocket).authorized === true;
}

function requestHandler(cluster: Cluster, token: () => string, requestLog: RequestRecord[], serverAddress: () => string, watches: Set<() => void>) {
  return async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const url = new URL(request.url ?? "/", "https://peer.invalid");
    let result: ApiResponse;
    if (!authenticated(request, token())) {
      request.resume();
      result = { code: 401, body: unauthorizedStatus };
    } else {
      try {
        result = await answer(request, url, cluster, serverAddress());
      } catch (error) {
        if (!(error instanceof StatusError)) cluster.logger.error({ err: error, path: url.pathname }, "kubernetes peer handler failed");
        result = { code: error instanceof StatusError ? error.status.code : 500, body: error instanceof StatusError ? error.status : failure(500, "InternalError", "Internal error occurred: the peer failed to handle the request") };
      }
    }
    if (requestLog.length >= requestLogLimit) requestLog.shift();
    requestLog.push({
      atMs: cluster.store.clock.wallNowMs(),
      method: request.method ?? "GET",
      path: url.pathname + url.search,
      code: result.code,
      ...(request.headers["content-type"] ? { contentType: request.headers["content-type"] } : {}),
      ...(request.headers["user-agent"] ? { userAgent: request.headers["user-agent"] } : {}),
    });
    if (result.watch) {
      const end = streamWatch(response, cluster.store, result.watch);
      watches.add(end);
      response.on("close", () => watches.delete(end));
    } else {
      send(response, result);
    }
  };
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

export async function startKubernetesPeer(options: KubernetesPeerOptions = {}): Promise<KubernetesPeer> {
  const logger = options.logger ?? silentLogger();
  const store = new ClusterStore(options.clock ?? systemClock);
  const cluster: Cluster = { store, budgets: new DisruptionBudgets(store), terminator: new PodTerminator(store), logger };
  const requestLog: RequestRecord[] = [];
  const watches = new Set<() => void>();
  const state = new KubernetesPeerState(cluster, requestLog);
  if (options.seed) state.seed(options.seed);
  let token = options.token ?? generateBearerToken();
  const identity = await generatePeerTlsIdentity(7, options.clientCertificates === true);
  const host = options.host ?? "127.0.0.1";
  let serverAddress = "";
  const mutualTls = options.clientCertificates === true ? { requestCert: true, rejectUnauthorized: false, ca: [identity.certPem] } : {};
  const server = createServer({ key: identity.keyPem, cert: identity.certPem, requestTimeout: 60_000, ...mutualTls }, (request, response) => {
    void requestHandler(cluster, () => token, requestLog, () => serverAddress, watches)(request, response);
  });
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
    state,
    close: async (deadlineMs = defaultCloseDeadlineMs) => {
      cluster.terminator.close();
      for (const end of [...watches]) end();
      await closeServer(server, deadlineMs);
      await rm(dir, { recursive: true, force: true });
    },
  };
}
