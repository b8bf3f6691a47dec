// The Helm chart (infra/helm/sef) through the real helm binary: `helm lint --strict`, `helm template` with default
// values and with each credential mode, the rendered manifests parsed and checked (metrics for Prometheus on the
// cluster, the exact RBAC rules, the optional ServiceMonitor and lease Role, the pod on or off the host network), the
// rendered config.json loaded by the agent's own config loader, and values that values.schema.json must refuse. The
// admission policies' CEL: helm-admission.test.ts. kubectl is not used: even `--dry-run=client` needs an API server
// (discovery and the OpenAPI document) that serves every kind the chart renders, and the testbed's peer serves a few.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parse, parseAllDocuments } from "yaml";
import { loadConfig } from "../../src/agent/config/load.js";
import { repoRoot } from "./support/bicep.js";
import { runHelm } from "./support/helm.js";
import { kubernetesSettingsSchema } from "../../src/agent/actions/kubernetes/settings.js";
import { metricsAddress } from "../../src/agent/pipeline/services.js";
import { nodeEventBody } from "../../src/agent/actions/kubernetes/views.js";

const chart = "infra/helm/sef";
const scratch = mkdtempSync(join(tmpdir(), "sef-helm-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const values = parse(readFileSync(join(repoRoot, chart, "values.yaml"), "utf8")) as { config: Record<string, unknown> };
const clientId = "0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0";
/** One values file per credential mode the chart supports. */
const credentialModes: Record<string, object> = {
  "node pool identity": {
    config: {
      sinks: ["eventhubs"],
      eventhubs: { fullyQualifiedNamespace: "ns.servicebus.windows.net", eventHubName: "se" },
    },
  },
  "workload identity": {
    workloadIdentity: { clientId },
    config: {
      sinks: ["eventhubs"],
      eventhubs: { fullyQualifiedNamespace: "ns.servicebus.windows.net", eventHubName: "se", credential: "default" },
    },
  },
  "existing secret": {
    existingSecret: "sef-credentials",
    config: { sinks: ["eventhubs"], eventhubs: { connectionStringEnv: "SEF_EH" } },
  },
};

interface Metadata {
  name: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
interface Probe {
  httpGet: { host?: string; path: string; port: number | string };
}
interface Container {
  name: string;
  image: string;
  imagePullPolicy: string;
  command?: string[];
  args?: string[];
  env?: { name: string; valueFrom?: { fieldRef: { fieldPath: string } } }[];
  envFrom?: unknown[];
  ports?: { name: string; containerPort: number; hostPort?: number; protocol: string }[];
  resources?: Record<string, Record<string, string>>;
  securityContext: Record<string, unknown>;
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  volumeMounts: { name: string; mountPath: string; readOnly?: boolean }[];
}
interface DaemonSet {
  kind: "DaemonSet";
  metadata: Metadata;
  spec: {
    selector: { matchLabels: Record<string, string> };
    updateStrategy: { type: string };
    template: {
      metadata: Metadata;
      spec: {
        serviceAccountName: string;
        priorityClassName?: string;
        hostNetwork?: boolean;
        automountServiceAccountToken?: boolean;
        dnsPolicy?: string;
        terminationGracePeriodSeconds: number;
        securityContext?: Record<string, unknown>;
        nodeSelector?: Record<string, string>;
        tolerations?: unknown[];
        initContainers: Container[];
        containers: Container[];
        volumes: { name: string; configMap?: { name: string }; hostPath?: { path: string; type: string } }[];
      };
    };
  };
}
interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: Metadata & { namespace?: string };
  data?: Record<string, string>;
  spec?: Record<string, unknown>;
  rules?: { apiGroups: string[]; resources: string[]; verbs: string[] }[];
  roleRef?: { apiGroup: string; kind: string; name: string };
  subjects?: { kind: string; name: string; namespace: string }[];
}
interface Rendered {
  status: number | null;
  stderr: string;
  manifests: Manifest[];
}

let valuesFiles = 0;
function valuesFile(overrides: object): string {
  const path = join(scratch, `values-${++valuesFiles}.json`);
  writeFileSync(path, JSON.stringify(overrides));
  return path;
}

/** `helm template sef <chart>` with `overrides` as a values file (JSON is YAML), the output parsed strictly. */
function render(overrides: object = {}): Rendered {
  const result = runHelm(
    ["template", "sef", chart, "--namespace", "sef-system", "--values", valuesFile(overrides)],
    scratch,
  );
  const manifests: Manifest[] = [];
  if (result.status === 0) {
    for (const doc of parseAllDocuments(result.stdout, { uniqueKeys: true })) {
      expect(doc.errors, result.stdout).toEqual([]);
      expect(doc.warnings, result.stdout).toEqual([]);
      const value = doc.toJS() as Manifest | null;
      if (value !== null) manifests.push(value);
    }
  }
  return { status: result.status, stderr: result.stderr, manifests };
}

function renderOk(overrides: object = {}): Manifest[] {
  const { status, stderr, manifests } = render(overrides);
  expect(stderr).toBe("");
  expect(status).toBe(0);
  return manifests;
}

function only<K extends string>(manifests: Manifest[], kind: K): K extends "DaemonSet" ? DaemonSet : Manifest {
  const found = manifests.filter((m) => m.kind === kind);
  expect(found.map((m) => m.kind)).toEqual([kind]);
  return found[0] as K extends "DaemonSet" ? DaemonSet : Manifest;
}

function agentContainer(ds: DaemonSet): Container {
  const containers = ds.spec.template.spec.containers;
  expect(containers.map((c) => c.name)).toEqual(["sef"]);
  return containers[0]!;
}

/** The rendered config.json, written out and read by the agent's own loader (as `sef run --config` would, NODE_NAME set by the pod spec). */
function loadRenderedConfig(
  manifests: Manifest[],
  env: NodeJS.ProcessEnv = { NODE_NAME: "aks-nodepool1-0" },
): ReturnType<typeof loadConfig> & { json: Record<string, unknown> } {
  const text = only(manifests, "ConfigMap").data?.["config.json"];
  expect(text).toBeTypeOf("string");
  const file = join(scratch, `config-${++valuesFiles}.json`);
  writeFileSync(file, text!);
  return { ...loadConfig({ file, env }), json: JSON.parse(text!) as Record<string, unknown> };
}

describe("helm lint", () => {
  it("passes --strict (no warnings) with the default values and with each credential mode", () => {
    const monitored = { metrics: { serviceMonitor: { enabled: true } } };
    for (const [mode, overrides] of [
      ["defaults", {}] as const,
      ["ServiceMonitor", monitored] as const,
      ...Object.entries(credentialModes),
    ]) {
      const result = runHelm(["lint", "--strict", chart, "--values", valuesFile(overrides)], scratch);
      expect(result.stdout, mode).toContain("1 chart(s) linted, 0 chart(s) failed");
      expect(result.stdout, mode).not.toMatch(/\[(WARNING|ERROR)\]/);
      expect(result.status, `${mode}: ${result.stdout}${result.stderr}`).toBe(0);
    }
  });

  it("fails on values the schema refuses", () => {
    const result = runHelm(
      ["lint", "--strict", chart, "--values", valuesFile({ image: { pullPolicy: "Sometimes" } })],
      scratch,
    );
    expect(result.status).not.toBe(0);
    expect(result.stdout + result.stderr).toContain("/image/pullPolicy");
  });
});

describe("helm template with the default values", () => {
  const manifests = renderOk();
  const ds = only(manifests, "DaemonSet");
  const pod = ds.spec.template.spec;
  const agent = agentContainer(ds);

  it("renders a ServiceAccount, a ConfigMap, a DaemonSet, the kubernetes action's RBAC and admission policies named after the release, with the chart's labels", () => {
    expect(manifests.map((m) => `${m.apiVersion} ${m.kind} ${m.metadata.name}`).sort()).toEqual([
      "admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy sef-sef-own-node",
      "admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy sef-sef-own-node-events",
      "admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy sef-sef-own-pods",
      "admissionregistration.k8s.io/v1 ValidatingAdmissionPolicyBinding sef-sef-own-node",
      "admissionregistration.k8s.io/v1 ValidatingAdmissionPolicyBinding sef-sef-own-node-events",
      "admissionregistration.k8s.io/v1 ValidatingAdmissionPolicyBinding sef-sef-own-pods",
      "apps/v1 DaemonSet sef-sef",
      "rbac.authorization.k8s.io/v1 ClusterRole sef-sef-node-actions",
      "rbac.authorization.k8s.io/v1 ClusterRoleBinding sef-sef-node-actions",
      "rbac.authorization.k8s.io/v1 Role sef-sef-node-events",
      "rbac.authorization.k8s.io/v1 RoleBinding sef-sef-node-events",
      "v1 ConfigMap sef-sef",
      "v1 ServiceAccount sef-sef",
    ]);
    const version = (JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as { version: string }).version;
    for (const m of manifests) {
      expect(m.metadata.labels).toEqual({
        "app.kubernetes.io/name": "sef",
        "app.kubernetes.io/instance": "sef",
        "app.kubernetes.io/version": version,
      });
    }
    expect(ds.spec.selector.matchLabels).toEqual({
      "app.kubernetes.io/name": "sef",
      "app.kubernetes.io/instance": "sef",
    });
    expect(ds.spec.template.metadata.labels).toMatchObject(ds.spec.selector.matchLabels);
    expect(ds.spec.updateStrategy).toEqual({ type: "RollingUpdate" });
    expect(pod.serviceAccountName).toBe("sef-sef");
  });

  it("runs on the node's network (IMDS whatever the cluster's IMDS restriction) with the DNS policy that keeps cluster DNS", () => {
    expect(pod.hostNetwork).toBe(true);
    expect(pod.dnsPolicy).toBe("ClusterFirstWithHostNet");
    expect(pod.automountServiceAccountToken).toBe(true);
  });

  it("filters system calls with the runtime's default seccomp profile (the kubelet applies none unless asked)", () => {
    expect(pod.securityContext).toEqual({ seccompProfile: { type: "RuntimeDefault" } });
  });

  it("runs on every Linux node, tainted ones included (Spot pools named too), as a node-critical pod", () => {
    expect(pod.nodeSelector).toEqual({ "kubernetes.io/os": "linux" });
    expect(pod.tolerations).toEqual([
      { operator: "Exists" },
      { key: "kubernetes.azure.com/scalesetpriority", operator: "Equal", value: "spot", effect: "NoSchedule" },
    ]);
    expect(pod.priorityClassName).toBe("system-node-critical");
  });

  it("gives the agent its node, pod and the node's IP from the downward API (it acts on its node, never evicts itself, serves metrics on the node's IP)", () => {
    expect(agent.env).toEqual([
      { name: "NODE_NAME", valueFrom: { fieldRef: { fieldPath: "spec.nodeName" } } },
      { name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
      { name: "POD_NAMESPACE", valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } } },
      { name: "SEF_METRICS_HOST", valueFrom: { fieldRef: { fieldPath: "status.hostIP" } } },
    ]);
  });

  it("the kubernetes action is on with the agent's own default policy, and may do only what it needs, bound to the pods' service account", () => {
    const { config } = loadRenderedConfig(manifests);
    expect(config.kubernetes).toEqual(kubernetesSettingsSchema.parse({}));
    const role = only(manifests, "ClusterRole");
    // Cluster-wide, exactly the calls the action makes: its Node read and patched, the cluster's Nodes listed (the
    // other nodes an event names), the node's pods listed, evicted, and deleted when still held at the deadline. The
    // admission policies narrow the writes to its own node (helm-admission.test.ts).
    expect(role.rules).toEqual([
      { apiGroups: [""], resources: ["nodes"], verbs: ["get", "list", "patch"] },
      { apiGroups: [""], resources: ["pods"], verbs: ["list", "delete"] },
      { apiGroups: [""], resources: ["pods/eviction"], verbs: ["create"] },
    ]);
    const binding = only(manifests, "ClusterRoleBinding");
    expect(binding.roleRef).toEqual({
      apiGroup: "rbac.authorization.k8s.io",
      kind: "ClusterRole",
      name: role.metadata.name,
    });
    const subjects = [{ kind: "ServiceAccount", name: pod.serviceAccountName, namespace: "sef-system" }];
    expect(binding.subjects).toEqual(subjects);
    // Events in one namespace: "default", where the agent writes those about its Node (as the kubelet does).
    const events = only(manifests, "Role");
    expect(events.metadata.namespace).toBe("default");
    const eventBody = nodeEventBody({ name: "n", uid: "u" }, "Reason", "message", "Normal", new Date(0)) as {
      metadata: { namespace: string };
    };
    expect(eventBody.metadata.namespace).toBe(events.metadata.namespace);
    expect(events.rules).toEqual([{ apiGroups: [""], resources: ["events"], verbs: ["create"] }]);
    const eventsBinding = only(manifests, "RoleBinding");
    expect(eventsBinding.metadata.namespace).toBe("default");
    expect(eventsBinding.roleRef).toEqual({
      apiGroup: "rbac.authorization.k8s.io",
      kind: "Role",
      name: events.metadata.name,
    });
    expect(eventsBinding.subjects).toEqual(subjects);
  });

  it("keeps the agent's state on the hostPath /var/lib/sef and its config from the ConfigMap, read-only", () => {
    expect(pod.volumes).toEqual([
      { name: "config", configMap: { name: "sef-sef" } },
      { name: "data", hostPath: { path: "/var/lib/sef", type: "DirectoryOrCreate" } },
    ]);
    expect(agent.volumeMounts).toEqual([
      { name: "config", mountPath: "/etc/sef", readOnly: true },
      { name: "data", mountPath: "/var/lib/sef" },
    ]);
    expect(agent.args).toEqual(["run", "--config", "/etc/sef/config.json"]);
    expect(agent.image).toBe("REPLACE-ME.azurecr.io/sef:0.1.0");
    expect(agent.imagePullPolicy).toBe("IfNotPresent");
  });

  it("runs the agent as 65532 with a read-only root, no privilege escalation and no capabilities", () => {
    expect(agent.securityContext).toEqual({
      runAsUser: 65532,
      runAsGroup: 65532,
      runAsNonRoot: true,
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ["ALL"] },
    });
  });

  it("hands the hostPath to 65532 first, from an init container of the same image that may only chown", () => {
    expect(pod.initContainers.map((c) => c.name)).toEqual(["data-owner"]);
    const init = pod.initContainers[0]!;
    expect(init.image).toBe(agent.image);
    expect(init.command).toEqual(["/opt/sef/node", "-e", "require('node:fs').chownSync('/var/lib/sef', 65532, 65532)"]);
    expect(init.securityContext).toMatchObject({
      runAsUser: 0,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ["ALL"], add: ["CHOWN"] },
    });
    expect(init.volumeMounts).toEqual([{ name: "data", mountPath: "/var/lib/sef" }]);
  });

  it("the ConfigMap's config.json is values.config as JSON with dataDir /var/lib/sef, and the agent accepts it", () => {
    const loaded = loadRenderedConfig(manifests);
    expect(loaded.json).toEqual({ ...values.config, dataDir: "/var/lib/sef" });
    expect(loaded.config.dataDir).toBe("/var/lib/sef");
    expect(loaded.config.sinks).toEqual(["stdout"]);
  });

  it("serves metrics on the node's IP at a named port, probed there, with Prometheus' scrape annotations", () => {
    // The agent as the pod runs it: the kubelet sets SEF_METRICS_HOST to the node's IP.
    const { config } = loadRenderedConfig(manifests, { NODE_NAME: "aks-nodepool1-0", SEF_METRICS_HOST: "10.224.0.4" });
    expect(metricsAddress(config)).toEqual({ host: "10.224.0.4", port: 10464 });
    expect(agent.ports).toEqual([{ name: "metrics", containerPort: 10464, hostPort: 10464, protocol: "TCP" }]);
    // No host: the kubelet probes the pod's IP, which is the node's on the host network.
    expect(agent.readinessProbe?.httpGet).toEqual({ path: "/readyz", port: "metrics" });
    expect(agent.livenessProbe?.httpGet).toEqual({ path: "/healthz", port: "metrics" });
    expect(ds.spec.template.metadata.annotations).toMatchObject({
      "prometheus.io/scrape": "true",
      "prometheus.io/port": "10464",
      "prometheus.io/path": "/metrics",
    });
    expect(pod.terminationGracePeriodSeconds * 1000).toBeGreaterThan(config.shutdownFlushMs);
    expect(manifests.map((m) => m.kind)).not.toContain("ServiceMonitor");
  });

  it("requests the idle agent's memory and limits it at twice a drain's peak (bench figures in values.yaml), no CPU limit", () => {
    expect(agent.resources).toEqual({ requests: { cpu: "10m", memory: "96Mi" }, limits: { memory: "160Mi" } });
  });

  it("uses the node pool's identity: no workload identity label, no service account annotation, no secret", () => {
    expect(ds.spec.template.metadata.labels).not.toHaveProperty("azure.workload.identity/use");
    expect(only(manifests, "ServiceAccount").metadata).not.toHaveProperty("annotations");
    expect(agent).not.toHaveProperty("envFrom");
  });
});

describe("helm template with each credential mode", () => {
  it("node pool identity: the config is rendered as given and needs nothing from the cluster", () => {
    const manifests = renderOk(credentialModes["node pool identity"]!);
    const ds = only(manifests, "DaemonSet");
    expect(ds.spec.template.metadata.labels).not.toHaveProperty("azure.workload.identity/use");
    expect(agentContainer(ds)).not.toHaveProperty("envFrom");
    const { sinkSettings } = loadRenderedConfig(manifests);
    expect(sinkSettings.eventhubs).toMatchObject({
      fullyQualifiedNamespace: "ns.servicebus.windows.net",
      credential: "managedIdentity",
    });
  });

  it("workload identity: the pod label and the service account's client-id annotation, next to its own annotations", () => {
    const overrides = credentialModes["workload identity"]!;
    const manifests = renderOk({ ...overrides, serviceAccount: { annotations: { "example.com/owner": "ops" } } });
    const ds = only(manifests, "DaemonSet");
    expect(ds.spec.template.metadata.labels?.["azure.workload.identity/use"]).toBe("true");
    const sa = only(manifests, "ServiceAccount");
    expect(sa.metadata.annotations).toEqual({
      "azure.workload.identity/client-id": clientId,
      "example.com/owner": "ops",
    });
    expect(ds.spec.template.spec.serviceAccountName).toBe(sa.metadata.name);
    expect(agentContainer(ds)).not.toHaveProperty("envFrom");
    expect(loadRenderedConfig(manifests).sinkSettings.eventhubs).toMatchObject({ credential: "default" });
  });

  it("existing secret: the agent (and only it) takes its environment from the secret", () => {
    const manifests = renderOk(credentialModes["existing secret"]!);
    const ds = only(manifests, "DaemonSet");
    expect(agentContainer(ds).envFrom).toEqual([{ secretRef: { name: "sef-credentials" } }]);
    expect(ds.spec.template.spec.initContainers[0]).not.toHaveProperty("envFrom");
    expect(ds.spec.template.metadata.labels).not.toHaveProperty("azure.workload.identity/use");
    // The config names the variable the secret must hold; the agent refuses the config until it is set.
    expect(() => loadRenderedConfig(manifests)).toThrow(/SEF_EH/);
    const connectionString =
      "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=send;SharedAccessKey=abc=;EntityPath=se";
    expect(
      loadRenderedConfig(manifests, { SEF_EH: connectionString, NODE_NAME: "aks-nodepool1-0" }).sinkSettings.eventhubs,
    ).toMatchObject({ connectionStringEnv: "SEF_EH" });
  });
});

describe("helm template with other values", () => {
  it("every example config in infra/config renders to itself (plus the chart's metrics defaults) and loads", () => {
    const examples = readdirSync(join(repoRoot, "infra/config")).filter((name) => name.endsWith(".json"));
    expect(examples.length).toBeGreaterThan(0);
    for (const name of examples) {
      const example = JSON.parse(readFileSync(join(repoRoot, "infra/config", name), "utf8")) as Record<string, unknown>;
      const loaded = loadRenderedConfig(renderOk({ config: example }));
      expect(loaded.json, name).toEqual({ ...values.config, ...example, dataDir: "/var/lib/sef" });
    }
  });

  it("image, node selector, tolerations, grace period and metrics address come from the values", () => {
    const manifests = renderOk({
      image: { repository: "myacr.azurecr.io/tools/sef", tag: "0.2.0", pullPolicy: "Always" },
      nodeSelector: { agentpool: "system" },
      tolerations: [{ key: "CriticalAddonsOnly", operator: "Exists" }],
      terminationGracePeriodSeconds: 45,
      config: { metrics: { host: "127.0.0.1", port: 9500 } },
      metrics: { listenOn: "config" },
    });
    const ds = only(manifests, "DaemonSet");
    const pod = ds.spec.template.spec;
    for (const c of [...pod.initContainers, ...pod.containers]) {
      expect(c.image, c.name).toBe("myacr.azurecr.io/tools/sef:0.2.0");
      expect(c.imagePullPolicy, c.name).toBe("Always");
    }
    // Helm merges maps with the defaults (the OS selector stays) and replaces lists.
    expect(pod.nodeSelector).toEqual({ "kubernetes.io/os": "linux", agentpool: "system" });
    expect(pod.tolerations).toEqual([{ key: "CriticalAddonsOnly", operator: "Exists" }]);
    expect(pod.terminationGracePeriodSeconds).toBe(45);
    expect(agentContainer(ds).readinessProbe?.httpGet).toEqual({ host: "127.0.0.1", path: "/readyz", port: "metrics" });
    expect(agentContainer(ds).ports).toEqual([
      { name: "metrics", containerPort: 9500, hostPort: 9500, protocol: "TCP" },
    ]);
    expect(loadRenderedConfig(manifests).config.metrics).toEqual({
      enabled: true,
      host: "127.0.0.1",
      port: 9500,
      maxConnections: 16,
      headersTimeoutMs: 5000,
      requestTimeoutMs: 10_000,
      keepAliveTimeoutMs: 5000,
    });
    // listenOn config: no node IP given, so the file's loopback address is where it listens; nothing to scrape.
    expect(agentContainer(ds).env?.map((e) => e.name)).not.toContain("SEF_METRICS_HOST");
    expect(ds.spec.template.metadata.annotations).not.toHaveProperty("prometheus.io/scrape");
  });

  it("no probes, port, node IP or scrape annotations when the metrics server is off (nothing would answer them)", () => {
    const ds = only(renderOk({ config: { metrics: { enabled: false } } }), "DaemonSet");
    const agent = agentContainer(ds);
    expect(agent).not.toHaveProperty("readinessProbe");
    expect(agent).not.toHaveProperty("livenessProbe");
    expect(agent).not.toHaveProperty("ports");
    expect(agent.env?.map((e) => e.name)).not.toContain("SEF_METRICS_HOST");
    expect(ds.spec.template.metadata.annotations).not.toHaveProperty("prometheus.io/scrape");
  });

  it("listenOn config with an address other than loopback: scraped there, probed there; scrapeAnnotations false leaves them out", () => {
    const ds = only(
      renderOk({ metrics: { listenOn: "config" }, config: { metrics: { host: "0.0.0.0" } } }),
      "DaemonSet",
    );
    expect(ds.spec.template.metadata.annotations).toMatchObject({
      "prometheus.io/scrape": "true",
      "prometheus.io/port": "10464",
    });
    expect(agentContainer(ds).livenessProbe?.httpGet).toEqual({ host: "0.0.0.0", path: "/healthz", port: "metrics" });
    const quiet = only(renderOk({ metrics: { scrapeAnnotations: false } }), "DaemonSet");
    expect(Object.keys(quiet.spec.template.metadata.annotations ?? {})).toEqual(["checksum/config"]);
  });

  it("serviceMonitor.enabled: a headless Service of the sef pods' metrics port and a ServiceMonitor that selects it", () => {
    const manifests = renderOk({
      metrics: { serviceMonitor: { enabled: true, interval: "15s", labels: { release: "kube-prometheus-stack" } } },
    });
    const service = only(manifests, "Service");
    const monitor = only(manifests, "ServiceMonitor");
    const ds = only(manifests, "DaemonSet");
    expect(service.metadata.name).toBe("sef-sef-metrics");
    expect(service.spec).toEqual({
      clusterIP: "None",
      selector: ds.spec.selector.matchLabels,
      ports: [{ name: "metrics", port: 10464, targetPort: "metrics", protocol: "TCP" }],
    });
    expect(agentContainer(ds).ports?.map((p) => p.name)).toEqual(["metrics"]);
    expect(monitor.apiVersion).toBe("monitoring.coreos.com/v1");
    expect(monitor.metadata.labels).toMatchObject({
      release: "kube-prometheus-stack",
      "app.kubernetes.io/name": "sef",
    });
    const selector = (monitor.spec as { selector: { matchLabels: Record<string, string> } }).selector.matchLabels;
    expect(service.metadata.labels).toMatchObject(selector);
    expect(selector).toEqual({
      "app.kubernetes.io/name": "sef",
      "app.kubernetes.io/instance": "sef",
      "app.kubernetes.io/component": "metrics",
    });
    expect((monitor.spec as { endpoints: unknown[] }).endpoints).toEqual([
      {
        port: "metrics",
        path: "/metrics",
        interval: "15s",
        relabelings: [{ sourceLabels: ["__meta_kubernetes_pod_node_name"], targetLabel: "node" }],
      },
    ]);
    const azure = only(
      renderOk({ metrics: { serviceMonitor: { enabled: true, apiVersion: "azmonitoring.coreos.com/v1" } } }),
      "ServiceMonitor",
    );
    expect(azure.apiVersion).toBe("azmonitoring.coreos.com/v1");
  });

  it("serviceMonitor.enabled where Prometheus cannot reach the agent (loopback, or metrics off) fails with the reason", () => {
    for (const overrides of [
      { metrics: { listenOn: "config", serviceMonitor: { enabled: true } } },
      { metrics: { serviceMonitor: { enabled: true } }, config: { metrics: { enabled: false } } },
    ]) {
      const { status, stderr } = render(overrides);
      expect(status).not.toBe(0);
      expect(stderr).toContain("metrics.serviceMonitor.enabled needs the agent to listen where Prometheus reaches it");
    }
  });

  it("a changed config changes the pod template's checksum (pods roll); the same values give the same one", () => {
    const checksum = (overrides: object): string | undefined =>
      only(renderOk(overrides), "DaemonSet").spec.template.metadata.annotations?.["checksum/config"];
    const base = checksum({});
    expect(base).toMatch(/^[0-9a-f]{64}$/);
    expect(checksum({})).toBe(base);
    expect(checksum({ config: { logLevel: "debug" } })).not.toBe(base);
  });

  it("config.kubernetes null: forwarding only, no RBAC, no policy, no API token in the pod, and the agent loads without NODE_NAME", () => {
    const manifests = renderOk({ config: { kubernetes: null } });
    expect(manifests.map((m) => m.kind).sort()).toEqual(["ConfigMap", "DaemonSet", "ServiceAccount"]);
    expect(only(manifests, "DaemonSet").spec.template.spec.automountServiceAccountToken).toBe(false);
    const { config, json } = loadRenderedConfig(manifests, {});
    expect(json).not.toHaveProperty("kubernetes");
    expect(config.kubernetes).toBeUndefined();
  });

  it("a policy set in the values reaches the agent; the rest keeps the chart's defaults", () => {
    const { config } = loadRenderedConfig(
      renderOk({ config: { kubernetes: { policy: { Freeze: "taint", Reboot: "cordon" }, drainLeadMs: 120_000 } } }),
    );
    expect(config.kubernetes?.policy).toMatchObject({
      Freeze: "taint",
      Reboot: "cordon",
      Preempt: "drain-then-approve",
    });
    expect(config.kubernetes?.drainLeadMs).toBe(120_000);
  });

  it("serviceAccount.create false: no ServiceAccount; the pods and the bindings use the named one", () => {
    const named = renderOk({ serviceAccount: { create: false, name: "sef-existing" } });
    expect(named.map((m) => m.kind)).not.toContain("ServiceAccount");
    const bindings = named.filter((m) => m.kind === "ClusterRoleBinding" || m.kind === "RoleBinding");
    expect(bindings.map((m) => m.metadata.name).sort()).toEqual(["sef-sef-node-actions", "sef-sef-node-events"]);
    for (const binding of bindings) {
      expect(binding.subjects, binding.metadata.name).toEqual([
        { kind: "ServiceAccount", name: "sef-existing", namespace: "sef-system" },
      ]);
    }
    expect(only(named, "DaemonSet").spec.template.spec.serviceAccountName).toBe("sef-existing");
  });

  it("never the namespace's default service account: create false without a name, or the name default, fails", () => {
    for (const serviceAccount of [
      { create: false },
      { create: false, name: "default" },
      { create: true, name: "default" },
    ]) {
      const { status, stderr, manifests } = render({ serviceAccount });
      expect(status, JSON.stringify(serviceAccount)).not.toBe(0);
      expect(manifests).toEqual([]);
      expect(stderr).toContain("sef's rights are never given to the namespace's default service account");
    }
  });

  it("no policy that drains: no pod rights at all (list, evict, delete)", () => {
    const manifests = renderOk({
      config: { kubernetes: { policy: { Reboot: "cordon", Redeploy: "taint", Preempt: "taint", Terminate: "none" } } },
    });
    expect(only(manifests, "ClusterRole").rules).toEqual([
      { apiGroups: [""], resources: ["nodes"], verbs: ["get", "list", "patch"] },
    ]);
    // Nor the admission policy for pod deletion; the Node's and the Events' stay.
    expect(manifests.filter((m) => m.kind === "ValidatingAdmissionPolicy").map((m) => m.metadata.name)).toEqual([
      "sef-sef-own-node",
      "sef-sef-own-node-events",
    ]);
    const oneDrains = renderOk({
      config: { kubernetes: { policy: { Reboot: "drain", Redeploy: "taint", Preempt: "taint", Terminate: "none" } } },
    });
    expect(only(oneDrains, "ClusterRole").rules?.map((r) => r.resources[0])).toEqual([
      "nodes",
      "pods",
      "pods/eviction",
    ]);
  });

  it("config.kubernetes.maxConcurrentDrains: a Role for Leases (get, create, update) in the release namespace, bound to the pods' account", () => {
    const manifests = renderOk({ config: { kubernetes: { maxConcurrentDrains: { limit: 2 } } } });
    const leases = manifests.find((m) => m.kind === "Role" && m.metadata.name === "sef-sef-drain-leases");
    expect(leases?.metadata.namespace).toBe("sef-system");
    expect(leases?.rules).toEqual([
      { apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["get", "create", "update"] },
    ]);
    const binding = manifests.find((m) => m.kind === "RoleBinding" && m.metadata.name === "sef-sef-drain-leases");
    expect(binding?.metadata.namespace).toBe("sef-system");
    expect(binding?.roleRef).toEqual({
      apiGroup: "rbac.authorization.k8s.io",
      kind: "Role",
      name: "sef-sef-drain-leases",
    });
    expect(binding?.subjects).toEqual([{ kind: "ServiceAccount", name: "sef-sef", namespace: "sef-system" }]);
    expect(renderOk().filter((m) => m.metadata.name === "sef-sef-drain-leases")).toEqual([]);
    const elsewhere = renderOk({ config: { kubernetes: { maxConcurrentDrains: { limit: 2, namespace: "leases" } } } });
    expect(
      elsewhere.filter((m) => m.metadata.name === "sef-sef-drain-leases").map((m) => [m.kind, m.metadata.namespace]),
    ).toEqual([
      ["Role", "leases"],
      ["RoleBinding", "leases"],
    ]);
  });

  it("hostNetwork false: the pod's own IP and DNS, no host port, metrics on the pod's IP; listenOn nodeIP then fails", () => {
    const manifests = renderOk({ hostNetwork: false, metrics: { listenOn: "podIP" } });
    const ds = only(manifests, "DaemonSet");
    const pod = ds.spec.template.spec;
    expect(pod.hostNetwork).toBe(false);
    expect(pod.dnsPolicy).toBe("ClusterFirst");
    const agent = agentContainer(ds);
    expect(agent.ports).toEqual([{ name: "metrics", containerPort: 10464, protocol: "TCP" }]);
    expect(agent.env).toContainEqual({
      name: "SEF_METRICS_HOST",
      valueFrom: { fieldRef: { fieldPath: "status.podIP" } },
    });
    expect(agent.readinessProbe?.httpGet).toEqual({ path: "/readyz", port: "metrics" });
    expect(ds.spec.template.metadata.annotations).toMatchObject({ "prometheus.io/scrape": "true" });
    for (const listenOn of ["nodeIP", "config"]) {
      const { status, stderr } = render({ hostNetwork: false, metrics: { listenOn } });
      expect(status, listenOn).not.toBe(0);
      expect(stderr).toContain("hostNetwork false needs metrics.listenOn podIP");
    }
    // On the host network podIP is the node's IP: the same address as nodeIP, from status.podIP.
    const onHost = agentContainer(only(renderOk({ metrics: { listenOn: "podIP" } }), "DaemonSet"));
    expect(onHost.ports?.[0]?.hostPort).toBe(10464);
    expect(onHost.env).toContainEqual({
      name: "SEF_METRICS_HOST",
      valueFrom: { fieldRef: { fieldPath: "status.podIP" } },
    });
  });

  it("the data directory on the node comes from dataHostPath; inside the container it stays /var/lib/sef", () => {
    const manifests = renderOk({ dataHostPath: "/mnt/sef-state" });
    const pod = only(manifests, "DaemonSet").spec.template.spec;
    expect(pod.volumes.find((v) => v.name === "data")?.hostPath).toEqual({
      path: "/mnt/sef-state",
      type: "DirectoryOrCreate",
    });
    expect(agentContainer(only(manifests, "DaemonSet")).volumeMounts).toContainEqual({
      name: "data",
      mountPath: "/var/lib/sef",
    });
    expect(loadRenderedConfig(manifests).config.dataDir).toBe("/var/lib/sef");
  });
});

describe("values.schema.json", () => {
  it("names every setting of the agent's kubernetes action (the test-only inClusterPathPrefix aside)", () => {
    const schema = JSON.parse(readFileSync(join(repoRoot, "infra/helm/sef/values.schema.json"), "utf8")) as {
      properties: { config: { properties: { kubernetes: { properties: Record<string, unknown> } } } };
    };
    const inChart = Object.keys(schema.properties.config.properties.kubernetes.properties).sort();
    const inAgent = Object.keys(kubernetesSettingsSchema.shape).filter((key) => key !== "inClusterPathPrefix");
    expect(inChart).toEqual(inAgent.sort());
  });

  const refused: [string, object, string][] = [
    ["an unknown pull policy", { image: { pullPolicy: "Sometimes" } }, "/image/pullPolicy"],
    ["an image tag that is not a string", { image: { tag: 1 } }, "/image/tag"],
    ["a grace period in words", { terminationGracePeriodSeconds: "30s" }, "/terminationGracePeriodSeconds"],
    [
      "a workload identity client id that is not a GUID",
      { workloadIdentity: { clientId: "sef-identity" } },
      "/workloadIdentity/clientId",
    ],
    ["a misspelt top-level key", { existingSecrets: "sef-credentials" }, "existingSecrets"],
    ["a secret name Kubernetes would refuse", { existingSecret: "Sef_Credentials" }, "/existingSecret"],
    ["a dataDir other than the mount", { config: { dataDir: "/data" } }, "/config/dataDir"],
    ["metrics port 0 (the probes need a fixed port)", { config: { metrics: { port: 0 } } }, "/config/metrics/port"],
    ["a relative dataHostPath", { dataHostPath: "var/lib/sef" }, "/dataHostPath"],
    ["tolerations as a map", { tolerations: { operator: "Exists" } }, "/tolerations"],
    ["a node selector value that is not a string", { nodeSelector: { spot: true } }, "/nodeSelector/spot"],
    [
      "an unknown node policy",
      { config: { kubernetes: { policy: { Reboot: "evict" } } } },
      "/config/kubernetes/policy/Reboot",
    ],
    ["a misspelt kubernetes setting", { config: { kubernetes: { drainLead: 5 } } }, "drainLead"],
    ["force that is not a boolean", { config: { kubernetes: { force: "yes" } } }, "/config/kubernetes/force"],
    ["an unknown metrics listen mode", { metrics: { listenOn: "hostIP" } }, "/metrics/listenOn"],
    ["hostNetwork as a string", { hostNetwork: "true" }, "/hostNetwork"],
    ["a removed drainConcurrency setting", { drainConcurrency: { enabled: true } }, "drainConcurrency"],
    [
      "a ServiceMonitor API group Prometheus does not watch",
      { metrics: { serviceMonitor: { apiVersion: "monitoring.coreos.com/v2" } } },
      "/metrics/serviceMonitor/apiVersion",
    ],
    [
      "a scrape interval in words",
      { metrics: { serviceMonitor: { interval: "30 seconds" } } },
      "/metrics/serviceMonitor/interval",
    ],
  ];
  for (const [what, overrides, path] of refused) {
    it(`helm template refuses ${what}`, () => {
      const { status, stderr, manifests } = render(overrides);
      expect(status).not.toBe(0);
      expect(manifests).toEqual([]);
      expect(stderr).toContain("values don't meet the specifications of the schema");
      expect(stderr).toContain(path);
    });
  }
});
