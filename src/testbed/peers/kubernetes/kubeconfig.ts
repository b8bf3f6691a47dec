// The kubeconfig a client (kubectl, @kubernetes/client-node) uses to reach the peer: one cluster with the peer's CA
// inline, one user with the bearer token, one current context.
import { mkdir, writeFile } from "node:fs/promises";
import { dirname } from "node:path";

export const kubeconfigContextName = "sef-testbed";

export function kubeconfigYaml(serverUrl: string, caPem: string, token: string, namespace = "default"): string {
  const ca = Buffer.from(caPem).toString("base64");
  return [
    "apiVersion: v1",
    "kind: Config",
    "clusters:",
    `- name: ${kubeconfigContextName}`,
    "  cluster:",
    `    server: ${serverUrl}`,
    `    certificate-authority-data: ${ca}`,
    "users:",
    `- name: ${kubeconfigContextName}`,
    "  user:",
    `    token: ${token}`,
    "contexts:",
    `- name: ${kubeconfigContextName}`,
    "  context:",
    `    cluster: ${kubeconfigContextName}`,
    `    user: ${kubeconfigContextName}`,
    `    namespace: ${namespace}`,
    `current-context: ${kubeconfigContextName}`,
    "",
  ].join("\n");
}

/** Writes the kubeconfig (mode 0600: it holds the token). */
export async function writeKubeconfig(path: string, serverUrl: string, caPem: string, token: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, kubeconfigYaml(serverUrl, caPem, token), { mode: 0o600 });
}
