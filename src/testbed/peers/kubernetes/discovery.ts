// Unaggregated API discovery, the documents the real API server serves at /version, /api, /api/v1, /apis and
// /apis/<group>/<version>: which resources exist, their kinds, verbs and short names. Clients that ask for aggregated
// discovery (kubectl 1.33 does) get these plain documents and fall back, as they do against older servers.

export const serverVersion = {
  major: "1",
  minor: "33",
  gitVersion: "v1.33.0",
  gitCommit: "60a317eadfcb839692a68eab88b2096f4d708f4f",
  gitTreeState: "clean",
  buildDate: "2025-04-23T13:00:00Z",
  goVersion: "go1.24.2",
  compiler: "gc",
  platform: "linux/amd64",
};

export interface ApiResource {
  name: string;
  singularName: string;
  namespaced: boolean;
  kind: string;
  verbs: string[];
  shortNames?: string[];
  categories?: string[];
  group?: string;
  version?: string;
}

/** Resources per group/version ("v1" = core), with the verbs the peer serves. */
export const apiResources: Readonly<Record<string, readonly ApiResource[]>> = {
  v1: [
    {
      name: "events",
      singularName: "event",
      namespaced: true,
      kind: "Event",
      verbs: ["create", "delete", "get", "list", "patch", "watch"],
      shortNames: ["ev"],
    },
    {
      name: "namespaces",
      singularName: "namespace",
      namespaced: false,
      kind: "Namespace",
      verbs: ["get", "list"],
      shortNames: ["ns"],
    },
    {
      name: "nodes",
      singularName: "node",
      namespaced: false,
      kind: "Node",
      verbs: ["get", "list", "patch", "update", "watch"],
      shortNames: ["no"],
    },
    {
      name: "pods",
      singularName: "pod",
      namespaced: true,
      kind: "Pod",
      verbs: ["delete", "get", "list", "patch", "watch"],
      shortNames: ["po"],
      categories: ["all"],
    },
    {
      name: "pods/eviction",
      singularName: "",
      namespaced: true,
      group: "policy",
      version: "v1",
      kind: "Eviction",
      verbs: ["create"],
    },
  ],
  "apps/v1": [
    {
      name: "daemonsets",
      singularName: "daemonset",
      namespaced: true,
      kind: "DaemonSet",
      verbs: ["get", "list", "watch"],
      shortNames: ["ds"],
      categories: ["all"],
    },
  ],
  "coordination.k8s.io/v1": [
    {
      name: "leases",
      singularName: "lease",
      namespaced: true,
      kind: "Lease",
      verbs: ["create", "delete", "get", "list", "patch", "update", "watch"],
    },
  ],
  "events.k8s.io/v1": [
    {
      name: "events",
      singularName: "event",
      namespaced: true,
      kind: "Event",
      verbs: ["create", "delete", "get", "list", "watch"],
      shortNames: ["ev"],
    },
  ],
  "policy/v1": [
    {
      name: "poddisruptionbudgets",
      singularName: "poddisruptionbudget",
      namespaced: true,
      kind: "PodDisruptionBudget",
      verbs: ["get", "list", "watch"],
      shortNames: ["pdb"],
    },
  ],
};

export function apiVersions(serverAddress: string): unknown {
  return {
    kind: "APIVersions",
    versions: ["v1"],
    serverAddressByClientCIDRs: [{ clientCIDR: "0.0.0.0/0", serverAddress }],
  };
}

function groupDocument(groupVersion: string): unknown {
  const [name = "", version = ""] = groupVersion.split("/");
  const entry = { groupVersion, version };
  return { name, versions: [entry], preferredVersion: entry };
}

export function apiGroupList(): unknown {
  const groups = Object.keys(apiResources).filter((gv) => gv.includes("/"));
  return { kind: "APIGroupList", apiVersion: "v1", groups: groups.map(groupDocument) };
}

/** /apis/<group>: the group alone, or undefined when the peer does not serve it. */
export function apiGroup(group: string): unknown {
  const groupVersion = Object.keys(apiResources).find((gv) => gv.startsWith(`${group}/`));
  return groupVersion ? { kind: "APIGroup", apiVersion: "v1", ...(groupDocument(groupVersion) as object) } : undefined;
}

export function apiResourceList(groupVersion: string): unknown {
  const resources = apiResources[groupVersion];
  if (!resources) return undefined;
  return { kind: "APIResourceList", apiVersion: "v1", groupVersion, resources };
}
