// Where the Kubernetes API is and how to prove who sef is (I/O): in-cluster service-account files or a kubeconfig,
// read with @kubernetes/client-node's own parts (kubeconfig entries, exec plugins, token files) and never its generated
// API; kubeconfigs with what only its whole KubeConfig serves (auth-provider plugins, proxies) go through KubeConfig.
import type * as Http from "node:http";
import type * as Https from "node:https";
import { readFileSync } from "node:fs";
import { dirname, isAbsolute, join } from "node:path";
import type { Cluster, User } from "@kubernetes/client-node/dist/config_types.js";
import { SefError } from "@sef/errors/sef-error.js";

/** The kubeconfig or the in-cluster environment does not say where the API server is or how to reach it. */
export class KubeCredentialsError extends SefError {
  override readonly name = "KubeCredentialsError";
  override readonly code = "SEF_ERR_KUBE_CREDENTIALS";
}

/** What one request needs: the agent to send it through and the headers that authenticate it. */
export interface PreparedRequest {
  agent: Http.Agent;
  headers: Record<string, string>;
}

export interface KubeEndpoint {
  /** The API server's base URL (`https://host:port`, no trailing slash). */
  readonly server: string;
  /** How the credentials were found, for the log (never a secret). */
  readonly source: string;
  /** Credentials for the next request: a token file re-read every 60 s, an exec plugin re-run when its credential expires. */
  prepare(): Promise<PreparedRequest>;
  /** After a 401: drop cached credentials, so the next prepare() reads the token file or runs the exec plugin again. */
  forget(): void;
  /** Closes pooled connections. */
  close(): void;
}

export interface EndpointOptions {
  /** Kubeconfig path; absent = in-cluster (service-account token and CA, KUBERNETES_SERVICE_HOST/PORT). */
  kubeconfig?: string;
  /** In-cluster: prefix of /var/run/secrets/kubernetes.io/serviceaccount ("" in a pod). */
  inClusterPathPrefix?: string;
  /** Longest run of an exec credential plugin (it is killed after). */
  execTimeoutMs: number;
  env?: NodeJS.ProcessEnv;
}

const serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";
const https = (): typeof Https => process.getBuiltinModule("node:https") as typeof Https;
const http = (): typeof Http => process.getBuiltinModule("node:http") as typeof Http;

/** Finds the API server and its credentials (reads the kubeconfig or the service-account files now). */
export async function loadKubeEndpoint(options: EndpointOptions): Promise<KubeEndpoint> {
  if (options.kubeconfig === undefined) return inClusterEndpoint(options);
  const { load } = await import("js-yaml");
  const document = load(readFileSync(options.kubeconfig, "utf8")) as Record<string, unknown> | null;
  const entry = await currentEntry(document ?? {});
  if (needsWholeKubeConfig(entry.cluster, entry.user, entry.rawUser))
    return wholeKubeConfigEndpoint(options.kubeconfig);
  return kubeconfigEndpoint(options, entry, dirname(options.kubeconfig));
}

interface KubeconfigEntry {
  cluster: Cluster;
  user: User;
  /** The user's entry as written (`token-file` is read here, not once at load). */
  rawUser: Record<string, unknown>;
}

/** The current context's cluster and user, parsed by client-node's own kubeconfig readers. */
async function currentEntry(document: Record<string, unknown>): Promise<KubeconfigEntry> {
  const { newClusters, newContexts, newUsers } = await import("@kubernetes/client-node/dist/config_types.js");
  const contextName = document["current-context"];
  const context = newContexts(document.contexts).find((c) => c.name === contextName);
  if (context === undefined)
    throw new KubeCredentialsError(`kubeconfig: current-context "${String(contextName)}" is not among its contexts`);
  const cluster = newClusters(document.clusters).find((c) => c.name === context.cluster);
  if (cluster === undefined)
    throw new KubeCredentialsError(
      `kubeconfig: context "${context.name}" names cluster "${context.cluster}", which is not in it`,
    );
  const rawUsers = Array.isArray(document.users)
    ? (document.users as Array<{ name?: string; user?: Record<string, unknown> }>)
    : [];
  const rawUser = rawUsers.find((u) => u.name === context.user)?.user ?? {};
  const user = newUsers(rawUsers.map((u) => ({ ...u, user: withoutTokenFile(u.user) }))).find(
    (u) => u.name === context.user,
  ) ?? { name: "" };
  return { cluster, user, rawUser };
}

/** client-node reads `token-file` once when it loads the kubeconfig; here a FileAuth re-reads it (rotation). */
function withoutTokenFile(user: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  if (user === undefined) return undefined;
  const { ["token-file"]: _tokenFile, ...rest } = user;
  return rest;
}

/** Auth-provider plugins (oidc, azure, gcp), basic auth, impersonation and proxies: client-node's KubeConfig does those. */
function needsWholeKubeConfig(cluster: Cluster, user: User, rawUser: Record<string, unknown>): boolean {
  return Boolean(
    cluster.proxyUrl || user.authProvider || user.username || user.impersonateUser || rawUser["auth-provider"],
  );
}

interface Authenticator {
  isAuthProvider(user: User): boolean;
  applyAuthentication(user: User, opts: Https.RequestOptions): Promise<void>;
}

/** Builds the authenticator a user needs (client-node's ExecAuth or FileAuth), fresh: no cached credential. */
type AuthenticatorFactory = () => Promise<Authenticator | undefined>;

async function kubeconfigEndpoint(
  options: EndpointOptions,
  entry: KubeconfigEntry,
  root: string,
): Promise<KubeEndpoint> {
  const { cluster, user, rawUser } = entry;
  const absolute = (file: string | undefined): string | undefined =>
    file === undefined || isAbsolute(file) ? file : join(root, file);
  const tokenFile =
    typeof rawUser["token-file"] === "string" && !user.token ? absolute(rawUser["token-file"]) : undefined;
  const fileUser: User | undefined = tokenFile
    ? { name: user.name, authProvider: { name: "tokenFile", config: { tokenFile } } }
    : undefined;
  const factory: AuthenticatorFactory = user.exec
    ? () => execAuthenticator(options.execTimeoutMs)
    : fileUser
      ? fileAuthenticator
      : async () => undefined;
  const tls: Https.AgentOptions = {
    ...(cluster.skipTLSVerify ? { rejectUnauthorized: false } : {}),
    ...(cluster.tlsServerName ? { servername: cluster.tlsServerName } : {}),
    ...optional("ca", fileOrData(absolute(cluster.caFile), cluster.caData)),
    ...optional("cert", fileOrData(absolute(user.certFile), user.certData)),
    ...optional("key", fileOrData(absolute(user.keyFile), user.keyData)),
  };
  const describe = user.exec
    ? "kubeconfig (exec plugin)"
    : tokenFile
      ? "kubeconfig (token file)"
      : user.token
        ? "kubeconfig (token)"
        : user.certData || user.certFile
          ? "kubeconfig (client certificate)"
          : "kubeconfig";
  return authenticatedEndpoint(cluster, fileUser ?? user, tls, factory, describe);
}

function inClusterEndpoint(options: EndpointOptions): KubeEndpoint {
  const env = options.env ?? process.env;
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port)
    throw new KubeCredentialsError(
      "in-cluster credentials: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set (not in a pod? set kubernetes.kubeconfig)",
    );
  const dir = `${options.inClusterPathPrefix ?? ""}${serviceAccountDir}`;
  const cluster: Cluster = {
    name: "inCluster",
    server: `https://${host.includes(":") ? `[${host}]` : host}:${port}`,
    skipTLSVerify: false,
  };
  const user: User = {
    name: "inClusterUser",
    authProvider: { name: "tokenFile", config: { tokenFile: `${dir}/token` } },
  };
  return authenticatedEndpoint(cluster, user, { ca: readFileSync(`${dir}/ca.crt`) }, fileAuthenticator, "in-cluster");
}

/** One kept-alive agent with the cluster's TLS settings; an exec credential's client certificate replaces it. */
function authenticatedEndpoint(
  cluster: Cluster,
  user: User,
  tls: Https.AgentOptions,
  factory: AuthenticatorFactory,
  source: string,
): KubeEndpoint {
  const plain = cluster.server.startsWith("http:");
  if (plain && !cluster.skipTLSVerify)
    throw new KubeCredentialsError(
      `kubeconfig: plain http to ${cluster.server} needs insecure-skip-tls-verify (as client-node asks)`,
    );
  const newAgent = (extra: Https.AgentOptions = {}): Http.Agent =>
    plain ? new (http().Agent)({ keepAlive: true }) : new (https().Agent)({ keepAlive: true, ...tls, ...extra });
  let agent = newAgent();
  let agentCert: string | Buffer | undefined;
  let authenticator: Promise<Authenticator | undefined> | undefined;
  let inFlight: Promise<PreparedRequest> | undefined;
  const prepareOnce = async (): Promise<PreparedRequest> => {
    const opts: Https.RequestOptions = { headers: {} };
    const auth = await (authenticator ??= factory());
    if (auth?.isAuthProvider(user)) await auth.applyAuthentication(user, opts);
    if (user.token) (opts.headers as Record<string, string>).Authorization = `Bearer ${user.token}`;
    const cert = opts.cert as string | Buffer | undefined;
    if (cert !== undefined && cert !== agentCert) {
      agent.destroy();
      agent = newAgent({ cert: opts.cert, key: opts.key });
      agentCert = cert;
    }
    return { agent, headers: opts.headers as Record<string, string> };
  };
  return {
    server: cluster.server.replace(/\/$/, ""),
    source,
    // Requests at the same moment share one look-up: one exec plugin run, not one per request.
    prepare: () => (inFlight ??= prepareOnce().finally(() => (inFlight = undefined))),
    forget() {
      authenticator = undefined;
    },
    close() {
      agent.destroy();
    },
  };
}

async function fileAuthenticator(): Promise<Authenticator> {
  const { FileAuth } = await import("@kubernetes/client-node/dist/file_auth.js");
  return new FileAuth();
}

/** client-node's ExecAuth, its plugin run with a deadline (ExecAuth itself would wait for a hung plugin forever). */
async function execAuthenticator(timeoutMs: number): Promise<Authenticator> {
  const [{ ExecAuth }, { spawn }] = await Promise.all([
    import("@kubernetes/client-node/dist/exec_auth.js"),
    import("node:child_process"),
  ]);
  const auth = new ExecAuth();
  // ExecAuth spawns through its `execFn` (the seam its own tests use): the same spawn, with a timeout and SIGKILL.
  (auth as unknown as { execFn: typeof spawn }).execFn = ((command: string, args: readonly string[], opts: object) =>
    spawn(command, args ?? [], { ...opts, timeout: timeoutMs, killSignal: "SIGKILL" })) as typeof spawn;
  return auth;
}

/** Anything client-node's KubeConfig handles beyond the above: its own request options (agent, proxy, headers). */
async function wholeKubeConfigEndpoint(path: string): Promise<KubeEndpoint> {
  const { KubeConfig } = await import("@kubernetes/client-node/dist/config.js");
  const load = () => {
    const config = new KubeConfig();
    config.loadFromFile(path);
    return config;
  };
  let config = load();
  const cluster = config.getCurrentCluster();
  if (cluster === null) throw new KubeCredentialsError("kubeconfig: no current cluster");
  let agent: Http.Agent | undefined;
  return {
    server: cluster.server.replace(/\/$/, ""),
    source: "kubeconfig (client-node KubeConfig)",
    async prepare() {
      const opts: Https.RequestOptions = {};
      await config.applyToHTTPSOptions(opts);
      agent = opts.agent as Http.Agent;
      return { agent, headers: (opts.headers ?? {}) as Record<string, string> };
    },
    forget() {
      agent?.destroy();
      agent = undefined;
      config = load();
    },
    close() {
      agent?.destroy();
    },
  };
}

function fileOrData(file: string | undefined, data: string | undefined): Buffer | undefined {
  if (file) return readFileSync(file);
  return data ? Buffer.from(data, "base64") : undefined;
}

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}
