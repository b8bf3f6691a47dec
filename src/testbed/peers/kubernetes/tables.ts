// Server-side printing: meta.k8s.io/v1 Table answers for kubectl (`Accept: ...;as=Table;g=meta.k8s.io;v=v1`), with
// the columns the real API server prints for nodes, pods, events, budgets, namespaces, leases, and Name/Age otherwise.
import type { KubeObject } from "./objects.js";

interface Column {
  name: string;
  type: string;
  format: string;
  description: string;
  priority: number;
}

type Cell = string | number;

/** True when the client asked for a Table (kubectl does; client libraries do not). */
export function wantsTable(accept: string): boolean {
  return accept
    .split(",")
    .some((part) => /as=Table/.test(part) && /g=meta\.k8s\.io/.test(part) && /v=v1(;|$|\s)/.test(part));
}

function column(name: string, priority = 0, format = "", type = "string"): Column {
  return { name, type, format, description: name, priority };
}

/** duration.HumanDuration, the way kubectl shows ages. */
export function humanDuration(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) return seconds % 60 === 0 ? `${minutes}m` : `${minutes}m${seconds % 60}s`;
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 8) return minutes % 60 === 0 ? `${hours}h` : `${hours}h${minutes % 60}m`;
  if (hours < 48) return `${hours}h`;
  const days = Math.floor(hours / 24);
  if (days < 8) return hours % 24 === 0 ? `${days}d` : `${days}d${hours % 24}h`;
  return `${days}d`;
}

function age(timestamp: unknown, nowMs: number): string {
  return typeof timestamp === "string" && timestamp !== "" ? humanDuration(nowMs - Date.parse(timestamp)) : "<unknown>";
}

function nodeRow(node: KubeObject, nowMs: number): Cell[] {
  const spec = (node.spec ?? {}) as { unschedulable?: boolean };
  const status = (node.status ?? {}) as {
    conditions?: { type: string; status: string }[];
    nodeInfo?: { kubeletVersion?: string; osImage?: string; kernelVersion?: string; containerRuntimeVersion?: string };
    addresses?: { type: string; address: string }[];
  };
  const ready = (status.conditions ?? []).find((c) => c.type === "Ready");
  const states = [ready ? (ready.status === "True" ? "Ready" : "NotReady") : "Unknown"];
  if (spec.unschedulable) states.push("SchedulingDisabled");
  const roles = Object.keys(node.metadata.labels ?? {})
    .filter((l) => l.startsWith("node-role.kubernetes.io/"))
    .map((l) => l.slice("node-role.kubernetes.io/".length));
  const address = (type: string): string => status.addresses?.find((a) => a.type === type)?.address ?? "<none>";
  const info = status.nodeInfo ?? {};
  return [
    node.metadata.name,
    states.join(","),
    roles.length ? roles.join(",") : "<none>",
    age(node.metadata.creationTimestamp, nowMs),
    info.kubeletVersion ?? "",
    address("InternalIP"),
    address("ExternalIP"),
    info.osImage ?? "",
    info.kernelVersion ?? "",
    info.containerRuntimeVersion ?? "",
  ];
}

interface ContainerStatus {
  ready: boolean;
  restartCount: number;
  state?: {
    waiting?: { reason?: string };
    running?: object;
    terminated?: { reason?: string; exitCode?: number; signal?: number };
  };
}

/** The STATUS column as the API server's pod printer words it: the phase, a container's waiting or terminated reason,
 * Terminating for a deleting pod that is not terminal yet. */
export function podStatusReason(pod: KubeObject): string {
  const status = (pod.status ?? {}) as { phase?: string; reason?: string; containerStatuses?: ContainerStatus[] };
  let reason = status.reason || status.phase || "Unknown";
  for (const container of [...(status.containerStatuses ?? [])].reverse()) {
    const { waiting, terminated } = container.state ?? {};
    if (waiting?.reason) reason = waiting.reason;
    else if (terminated?.reason) reason = terminated.reason;
    else if (terminated)
      reason = terminated.signal ? `Signal:${terminated.signal}` : `ExitCode:${terminated.exitCode ?? 0}`;
  }
  const terminal = status.phase === "Succeeded" || status.phase === "Failed";
  return pod.metadata.deletionTimestamp && !terminal ? "Terminating" : reason;
}

function podRow(pod: KubeObject, nowMs: number): Cell[] {
  const status = (pod.status ?? {}) as { podIP?: string; containerStatuses?: ContainerStatus[] };
  const containers = status.containerStatuses ?? [];
  const restarts = containers.reduce((sum, c) => sum + c.restartCount, 0);
  const nodeName = (pod.spec as { nodeName?: string } | undefined)?.nodeName ?? "<none>";
  return [
    pod.metadata.name,
    `${containers.filter((c) => c.ready).length}/${containers.length}`,
    podStatusReason(pod),
    restarts,
    age(pod.metadata.creationTimestamp, nowMs),
    status.podIP ?? "<none>",
    nodeName,
    "<none>",
    "<none>",
  ];
}

function eventRow(event: KubeObject, nowMs: number): Cell[] {
  const e = event as unknown as {
    type?: string;
    reason?: string;
    message?: string;
    count?: number;
    firstTimestamp?: string;
    lastTimestamp?: string;
    eventTime?: string;
    source?: { component?: string; host?: string };
    involvedObject?: { kind?: string; name?: string; fieldPath?: string };
    reportingComponent?: string;
    series?: { count: number; lastObservedTime: string };
  };
  const last = e.series?.lastObservedTime ?? e.lastTimestamp ?? e.eventTime;
  const first = e.firstTimestamp ?? e.eventTime;
  const lastSeen = e.series
    ? `${age(last, nowMs)} (x${e.series.count} over ${age(first, nowMs)})`
    : (e.count ?? 1) > 1
      ? `${age(last, nowMs)} (x${e.count} over ${age(first, nowMs)})`
      : age(last, nowMs);
  const object = `${(e.involvedObject?.kind ?? "").toLowerCase()}/${e.involvedObject?.name ?? ""}`;
  const source = e.source?.component
    ? [e.source.component, e.source.host].filter(Boolean).join(", ")
    : (e.reportingComponent ?? "");
  return [
    lastSeen,
    e.type ?? "",
    e.reason ?? "",
    object,
    e.involvedObject?.fieldPath ?? "",
    source,
    e.message ?? "",
    age(first, nowMs),
    e.count ?? 1,
    event.metadata.name,
  ];
}

function budgetRow(pdb: KubeObject, nowMs: number): Cell[] {
  const spec = (pdb.spec ?? {}) as { minAvailable?: number | string; maxUnavailable?: number | string };
  const status = (pdb.status ?? {}) as { disruptionsAllowed?: number };
  return [
    pdb.metadata.name,
    spec.minAvailable ?? "N/A",
    spec.maxUnavailable ?? "N/A",
    status.disruptionsAllowed ?? 0,
    age(pdb.metadata.creationTimestamp, nowMs),
  ];
}

interface Layout {
  columns: Column[];
  row: (object: KubeObject, nowMs: number) => Cell[];
}

/** Name, the columns between read from the object ("" when it lacks the field), Age: how the server prints simple kinds. */
function nameAgeLayout(
  ...between: ReadonlyArray<readonly [title: string, read: (object: KubeObject) => Cell | undefined]>
): Layout {
  return {
    columns: [column("Name", 0, "name"), ...between.map(([title]) => column(title)), column("Age")],
    row: (object, nowMs) => [
      object.metadata.name,
      ...between.map(([, read]) => read(object) ?? ""),
      age(object.metadata.creationTimestamp, nowMs),
    ],
  };
}

const layouts: Record<string, Layout> = {
  nodes: {
    columns: [
      column("Name", 0, "name"),
      column("Status"),
      column("Roles"),
      column("Age"),
      column("Version"),
      column("Internal-IP", 1),
      column("External-IP", 1),
      column("OS-Image", 1),
      column("Kernel-Version", 1),
      column("Container-Runtime", 1),
    ],
    row: nodeRow,
  },
  pods: {
    columns: [
      column("Name", 0, "name"),
      column("Ready"),
      column("Status"),
      column("Restarts", 0, "", "string"),
      column("Age"),
      column("IP", 1),
      column("Node", 1),
      column("Nominated Node", 1),
      column("Readiness Gates", 1),
    ],
    row: podRow,
  },
  events: {
    columns: [
      column("Last Seen"),
      column("Type"),
      column("Reason"),
      column("Object"),
      column("Subobject", 1),
      column("Source", 1),
      column("Message"),
      column("First Seen", 1),
      column("Count", 1),
      column("Name", 1, "name"),
    ],
    row: eventRow,
  },
  namespaces: nameAgeLayout(["Status", (ns) => (ns.status as { phase?: string } | undefined)?.phase]),
  leases: nameAgeLayout(["Holder", (lease) => (lease.spec as { holderIdentity?: string } | undefined)?.holderIdentity]),
  poddisruptionbudgets: {
    columns: [
      column("Name", 0, "name"),
      column("Min Available"),
      column("Max Unavailable"),
      column("Allowed Disruptions", 0, "", "integer"),
      column("Age"),
    ],
    row: budgetRow,
  },
};

const defaultLayout = nameAgeLayout();

/** A Table of `objects` (rows carry PartialObjectMetadata, which kubectl reads for the NAMESPACE column). */
export function tableOf(
  resource: string,
  objects: readonly KubeObject[],
  nowMs: number,
  resourceVersion: string,
  continueToken?: string,
): unknown {
  const layout = layouts[resource] ?? defaultLayout;
  return {
    kind: "Table",
    apiVersion: "meta.k8s.io/v1",
    metadata: { resourceVersion, ...(continueToken ? { continue: continueToken } : {}) },
    columnDefinitions: layout.columns,
    rows: objects.map((object) => ({
      cells: layout.row(object, nowMs),
      object: { kind: "PartialObjectMetadata", apiVersion: "meta.k8s.io/v1", metadata: object.metadata },
    })),
  };
}
