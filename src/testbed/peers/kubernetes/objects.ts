// The Kubernetes object shapes the peer stores and serves (the JSON of the real API, loosely typed) and the time
// formats the API uses: RFC 3339 seconds for metadata times, microseconds for events' eventTime.
import { randomInt } from "node:crypto";

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid: string;
  resourceVersion: string;
  creationTimestamp: string;
  generation?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  generateName?: string;
  finalizers?: string[];
}

/** Any stored object: apiVersion, kind, metadata, and whatever else the kind carries. */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  [key: string]: unknown;
}

/** An object before the store stamps it (uid, resourceVersion, creationTimestamp optional). */
export interface NewKubeObject {
  apiVersion: string;
  kind: string;
  metadata: Partial<ObjectMeta> & { name: string };
  [key: string]: unknown;
}

export interface Toleration {
  key?: string;
  operator?: "Exists" | "Equal";
  value?: string;
  effect?: "NoSchedule" | "PreferNoSchedule" | "NoExecute";
  tolerationSeconds?: number;
}

export interface Taint {
  key: string;
  value?: string;
  effect: "NoSchedule" | "PreferNoSchedule" | "NoExecute";
  timeAdded?: string;
}

/** A Kubernetes timestamp (RFC 3339, whole seconds, UTC). */
export function kubeTime(epochMs: number): string {
  return new Date(Math.floor(epochMs / 1000) * 1000).toISOString().replace(".000Z", "Z");
}

/** A Kubernetes MicroTime (RFC 3339 with six fractional digits, UTC). */
export function kubeMicroTime(epochMs: number): string {
  return new Date(epochMs).toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}

/** Five lower-case letters and digits without vowels, like the API server's generateName suffixes. */
export function randomNameSuffix(): string {
  const alphabet = "bcdfghjklmnpqrstvwxz2456789";
  return Array.from({ length: 5 }, () => alphabet[randomInt(alphabet.length)]).join("");
}

/** Deep copy of a JSON-shaped value (objects handed out are never the stored ones). */
export function copyOf<T>(value: T): T {
  return structuredClone(value);
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Fields that Go's `omitempty` drops when empty/false/0, for the kinds a client may write (dotted paths). */
const omitEmptyPaths: readonly string[] = [
  "metadata.labels",
  "metadata.annotations",
  "metadata.ownerReferences",
  "metadata.finalizers",
  "spec.taints",
  "spec.unschedulable",
  "spec.providerID",
  "spec.podCIDR",
];

function isEmptyValue(value: unknown): boolean {
  if (value === false || value === "" || value === 0 || value === null) return true;
  if (Array.isArray(value)) return value.length === 0;
  return isPlainObject(value) && Object.keys(value).length === 0;
}

/** Drops empty omitempty fields, so an object reads back as the API server would serialise it. */
export function withoutEmptyFields<T extends { metadata: object }>(object: T): T {
  for (const path of omitEmptyPaths) {
    const parts = path.split(".");
    const last = parts.pop() ?? "";
    let parent: unknown = object;
    for (const part of parts) parent = isPlainObject(parent) ? parent[part] : undefined;
    if (isPlainObject(parent) && last in parent && isEmptyValue(parent[last])) delete parent[last];
  }
  return object;
}
