// The kubernetes action's client against the testbed's Kubernetes API peer over real TLS: kubeconfig users with a
// token, a token file, an exec plugin (a real child process printing an ExecCredential) and a client certificate;
// in-cluster files with the token rotated under it; a wrong CA refused; insecure-skip-tls-verify; a hung plugin killed.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { describe, expect, it, type TestContext } from "vitest";
import { stringify } from "yaml";
import { createKubeApi, KubeApiError, type KubeApi } from "../../src/agent/actions/kubernetes/client.js";
import { KubeCredentialsError } from "../../src/agent/actions/kubernetes/credentials.js";
import { startKubernetesPeer, type KubernetesPeer } from "../../src/testbed/peers/kubernetes/index.js";
import { generateLocalTlsIdentity } from "../../src/testbed/support/tls-identity.js";
import { waitFor } from "../helpers/wait.js";

const node = "aks-nodepool1-0";

async function peerWith(test: TestContext, options: { clientCertificates?: boolean } = {}): Promise<KubernetesPeer> {
  const peer = await startKubernetesPeer({
    seed: { nodes: [{ name: node, providerID: "azure:///vm/0" }] },
    ...options,
  });
  test.onTestFinished(() => peer.close());
  return peer;
}

async function api(test: TestContext, options: Parameters<typeof createKubeApi>[0]): Promise<KubeApi> {
  const kube = await createKubeApi(options);
  test.onTestFinished(() => kube.close());
  return kube;
}

/** A kubeconfig for the peer with the given user entry (and cluster fields over the peer's CA). */
function kubeconfig(
  peer: KubernetesPeer,
  user: Record<string, unknown>,
  cluster: Record<string, unknown> = {},
): string {
  const dir = mkdtempSync(join(tmpdir(), "sef-kubeconfig-"));
  const path = join(dir, "kubeconfig");
  const document = {
    apiVersion: "v1",
    kind: "Config",
    clusters: [
      {
        name: "c",
        cluster: {
          server: peer.url,
          "certificate-authority-data": Buffer.from(peer.caPem).toString("base64"),
          ...cluster,
        },
      },
    ],
    users: [{ name: "u", user }],
    contexts: [{ name: "x", context: { cluster: "c", user: "u" } }],
    "current-context": "x",
  };
  writeFileSync(path, stringify(document), { mode: 0o600 });
  return path;
}

const unauthorized = (peer: KubernetesPeer): number => peer.state.requests().filter((r) => r.code === 401).length;
const authorizedReads = (peer: KubernetesPeer): number =>
  peer.state.requests().filter((r) => r.code === 200 && r.path === `/api/v1/nodes/${node}`).length;

/** An exec credential plugin: a node script that prints an ExecCredential with the token in `tokenFile`, valid `validMs`. */
function execPlugin(
  tokenFile: string,
  validMs: number,
): { user: Record<string, unknown>; runs: () => Array<{ pid: number; expiresAtMs: number }> } {
  const dir = mkdtempSync(join(tmpdir(), "sef-exec-plugin-"));
  const runsFile = join(dir, "runs.jsonl");
  const script = join(dir, "plugin.mjs");
  writeFileSync(
    script,
    [
      `import { appendFileSync, readFileSync } from "node:fs";`,
      `const expiresAtMs = Date.now() + ${validMs};`,
      `appendFileSync(${JSON.stringify(runsFile)}, JSON.stringify({ pid: process.pid, expiresAtMs }) + "\\n");`,
      `console.log(JSON.stringify({ apiVersion: "client.authentication.k8s.io/v1", kind: "ExecCredential",`,
      `  status: { token: readFileSync(${JSON.stringify(tokenFile)}, "utf8").trim(), expirationTimestamp: new Date(expiresAtMs).toISOString() } }));`,
    ].join("\n"),
  );
  return {
    user: execUser(process.execPath, [script]),
    runs: () => jsonLines<{ pid: number; expiresAtMs: number }>(runsFile),
  };
}

const execUser = (command: string, args: string[]) => ({
  exec: { apiVersion: "client.authentication.k8s.io/v1", command, args, interactiveMode: "Never" },
});
const jsonLines = <T>(file: string): T[] =>
  existsSync(file)
    ? readFileSync(file, "utf8")
        .trim()
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l) as T)
    : [];

/** Writes a new token where the client reads it and makes the peer accept only that one (the old one gets 401). */
function rotate(peer: KubernetesPeer, tokenFile: string, next: string): void {
  writeFileSync(tokenFile, next);
  peer.setToken(next);
}

describe.concurrent("kubernetes client credentials and TLS against the Kubernetes API peer", () => {
  it("kubeconfig with a token", async (test) => {
    const peer = await peerWith(test);
    const kube = await api(test, { kubeconfig: kubeconfig(peer, { token: peer.token }), requestTimeoutMs: 10_000 });
    expect((await kube.readNode(node)).providerID).toBe("azure:///vm/0");
    expect(unauthorized(peer)).toBe(0);
  });

  it("kubeconfig with a token file (a path relative to the kubeconfig): a rotated token is read again after the peer refuses the old one", async (test) => {
    const peer = await peerWith(test);
    const path = kubeconfig(peer, { "token-file": "sa-token" });
    const tokenFile = join(dirname(path), "sa-token");
    writeFileSync(tokenFile, peer.token);
    const kube = await api(test, { kubeconfig: path, requestTimeoutMs: 10_000 });
    await kube.readNode(node);
    rotate(peer, tokenFile, "rotated-token-1");
    expect((await kube.readNode(node)).name).toBe(node);
    expect(unauthorized(peer)).toBe(1); // the old token once, then the file is read again
    expect(authorizedReads(peer)).toBe(2);
  });

  it("in-cluster service-account files: the token file rewritten mid-run, the old token refused", async (test) => {
    const peer = await peerWith(test);
    const kube = await api(test, {
      inClusterPathPrefix: peer.inCluster.pathPrefix,
      env: { ...peer.inCluster.env },
      requestTimeoutMs: 10_000,
    });
    await kube.readNode(node);
    rotate(peer, peer.tokenFile, "rotated-token-2");
    await kube.listPods(node);
    rotate(peer, peer.tokenFile, "rotated-token-3");
    expect((await kube.readNode(node)).name).toBe(node);
    expect(unauthorized(peer)).toBe(2);
    expect(peer.state.requests().filter((r) => r.code === 200 && r.path.startsWith("/api/v1/")).length).toBe(3);
  });

  it("kubeconfig with an exec plugin: run once, its credential cached until it expires, run again after (and on a 401)", async (test) => {
    const peer = await peerWith(test);
    const tokenFile = join(mkdtempSync(join(tmpdir(), "sef-token-")), "token");
    writeFileSync(tokenFile, peer.token);
    const plugin = execPlugin(tokenFile, 4_000);
    const kube = await api(test, { kubeconfig: kubeconfig(peer, plugin.user), requestTimeoutMs: 10_000 });
    await kube.readNode(node);
    await kube.readNode(node);
    const first = plugin.runs();
    expect(first.length).toBe(1); // the warm-up and both reads share one credential
    await waitFor("the credential to expire", () => Date.now() > first[0]!.expiresAtMs + 50, { timeoutMs: 5_000 });
    await kube.readNode(node);
    expect(plugin.runs().length).toBe(2); // expired: run again, before any 401
    expect(unauthorized(peer)).toBe(0);
    rotate(peer, tokenFile, "rotated-token-4");
    expect((await kube.readNode(node)).name).toBe(node);
    expect(plugin.runs().length).toBe(3); // refused while still valid: run again at once
    expect(unauthorized(peer)).toBe(1);
  });

  it("an exec plugin that hangs is killed at the request's deadline, and the request fails with status 0", async (test) => {
    const peer = await peerWith(test);
    const pidsFile = join(mkdtempSync(join(tmpdir(), "sef-hang-")), "pids");
    const hanging = execUser("/bin/sh", ["-c", `echo $$ >> ${pidsFile}; exec sleep 600`]);
    const kube = await api(test, { kubeconfig: kubeconfig(peer, hanging), requestTimeoutMs: 2_000 });
    const error = await kube.readNode(node).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(KubeApiError);
    expect((error as KubeApiError).status).toBe(0);
    expect((error as KubeApiError).code).toBe("SEF_ERR_KUBE_API");
    const pids = await waitFor(
      "the plugin's pid",
      () => jsonLines<number>(pidsFile).length > 0 && jsonLines<number>(pidsFile),
    );
    const alive = (pid: number): boolean =>
      existsSync(`/proc/${pid}`) && !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, "utf8"));
    const detail = () =>
      execFileSync("ps", ["-o", "pid,ppid,stat,etime,cmd", "-p", pids.join(",")], { encoding: "utf8" });
    await waitFor("every hung plugin to be killed", () => pids.every((pid) => !alive(pid)), {
      timeoutMs: 5_000,
      detail,
    });
    expect(peer.state.requests()).toEqual([]);
  });

  it("kubeconfig with a client certificate (mutual TLS): accepted without a token; without it, 401", async (test) => {
    const peer = await peerWith(test, { clientCertificates: true });
    const client = peer.clientCertificate!;
    const b64 = (pem: string): string => Buffer.from(pem).toString("base64");
    const kube = await api(test, {
      kubeconfig: kubeconfig(peer, {
        "client-certificate-data": b64(client.certPem),
        "client-key-data": b64(client.keyPem),
      }),
      requestTimeoutMs: 10_000,
    });
    expect((await kube.readNode(node)).name).toBe(node);
    const anonymous = await api(test, { kubeconfig: kubeconfig(peer, {}), requestTimeoutMs: 10_000 });
    await expect(anonymous.readNode(node)).rejects.toMatchObject({ status: 401 });
  });

  it("a CA that did not sign the server's certificate is refused before any request; insecure-skip-tls-verify accepts it", async (test) => {
    const peer = await peerWith(test);
    const other = await generateLocalTlsIdentity({ commonName: "another CA", validDays: 1 });
    const wrongCa = { "certificate-authority-data": Buffer.from(other.certPem).toString("base64") };
    const kube = await api(test, {
      kubeconfig: kubeconfig(peer, { token: peer.token }, wrongCa),
      requestTimeoutMs: 10_000,
    });
    const error = (await kube.readNode(node).then(
      () => undefined,
      (err: unknown) => err,
    )) as KubeApiError;
    expect(error).toBeInstanceOf(KubeApiError);
    expect(error.status).toBe(0);
    expect(error.message).toMatch(/certificate/i);
    expect(error.message).not.toContain(peer.token);
    expect(peer.state.requests()).toEqual([]);
    const skip = { "certificate-authority-data": undefined, "insecure-skip-tls-verify": true };
    const insecure = await api(test, {
      kubeconfig: kubeconfig(peer, { token: peer.token }, skip),
      requestTimeoutMs: 10_000,
    });
    expect((await insecure.readNode(node)).name).toBe(node);
  });

  it("what only client-node's whole KubeConfig serves (here impersonation) goes through it", async (test) => {
    const peer = await peerWith(test);
    const kube = await api(test, {
      kubeconfig: kubeconfig(peer, { token: peer.token, as: "system:serviceaccount:sef-system:sef" }),
      requestTimeoutMs: 10_000,
    });
    expect((await kube.readNode(node)).name).toBe(node);
    peer.setToken("rotated-token-5");
    await expect(kube.readNode(node)).rejects.toMatchObject({ status: 401, code: "SEF_ERR_KUBE_API" });
  });
  it("a kubeconfig that names no cluster, or no in-cluster environment, is a KubeCredentialsError with its code and the fix", async (test) => {
    const peer = await peerWith(test);
    const path = kubeconfig(peer, { token: peer.token });
    writeFileSync(path, readFileSync(path, "utf8").replace("current-context: x", "current-context: elsewhere"));
    const missingContext = await createKubeApi({ kubeconfig: path, requestTimeoutMs: 2_000 }).catch((e: unknown) => e);
    expect(missingContext).toBeInstanceOf(KubeCredentialsError);
    expect(missingContext).toMatchObject({
      code: "SEF_ERR_KUBE_CREDENTIALS",
      message: expect.stringContaining('current-context "elsewhere"'),
    });
    const outsidePod = await createKubeApi({ env: {}, requestTimeoutMs: 2_000 }).catch((e: unknown) => e);
    expect(outsidePod).toMatchObject({
      code: "SEF_ERR_KUBE_CREDENTIALS",
      message: expect.stringContaining("set kubernetes.kubeconfig"),
    });
  });
});
