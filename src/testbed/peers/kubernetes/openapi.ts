// OpenAPI v3 as the API server publishes it at /openapi/v3 (an index of group-versions, each with a content-hash
// URL) and /openapi/v3/<api|apis/group>/<version>: one operation per verb the peer serves, with the
// x-kubernetes-action and x-kubernetes-group-version-kind extensions and the query parameters of writes
// (dryRun, fieldManager, fieldValidation). kubectl reads it to learn that the server validates fields itself
// (`--validate=strict`, its default, needs that or a schema). No component schemas: `kubectl explain` finds none.
import { createHash } from "node:crypto";
import { apiResources, serverVersion, type ApiResource } from "./discovery.js";

type Operation = Record<string, unknown>;

const writeParameters = ["dryRun", "fieldManager", "fieldValidation"].map((name) => ({
  name,
  in: "query",
  schema: { type: "string", uniqueItems: true },
}));

/** The path key of a group-version ("api/v1", "apis/coordination.k8s.io/v1"). */
export function groupVersionPath(groupVersion: string): string {
  return groupVersion.includes("/") ? `apis/${groupVersion}` : `api/${groupVersion}`;
}

function operation(action: string, resource: ApiResource, groupVersion: string, write: boolean): Operation {
  const [group = "", version = groupVersion] = groupVersion.includes("/")
    ? groupVersion.split("/")
    : ["", groupVersion];
  const gvk = { group: resource.group ?? group, version: resource.version ?? version, kind: resource.kind };
  const responses = { [action === "post" ? "201" : "200"]: { description: action === "post" ? "Created" : "OK" } };
  return {
    "x-kubernetes-action": action,
    "x-kubernetes-group-version-kind": gvk,
    parameters: write ? writeParameters : [],
    responses,
  };
}

/** The paths of one resource: the collection (list, create) and the named object (get, update, patch, delete). */
function resourcePaths(resource: ApiResource, groupVersion: string): Record<string, Record<string, Operation>> {
  const base = `/${groupVersionPath(groupVersion)}${resource.namespaced ? "/namespaces/{namespace}" : ""}`;
  const [plural = "", subresource] = resource.name.split("/");
  const has = (verb: string): boolean => resource.verbs.includes(verb);
  if (subresource)
    return { [`${base}/${plural}/{name}/${subresource}`]: { post: operation("post", resource, groupVersion, true) } };
  const collection: Record<string, Operation> = {};
  if (has("list")) collection.get = operation("list", resource, groupVersion, false);
  if (has("create")) collection.post = operation("post", resource, groupVersion, true);
  const item: Record<string, Operation> = {};
  if (has("get")) item.get = operation("get", resource, groupVersion, false);
  if (has("update")) item.put = operation("put", resource, groupVersion, true);
  if (has("patch")) item.patch = operation("patch", resource, groupVersion, true);
  if (has("delete")) item.delete = operation("delete", resource, groupVersion, false);
  return { [`${base}/${plural}`]: collection, [`${base}/${plural}/{name}`]: item };
}

/** The OpenAPI v3 document of a group-version, or undefined when the peer does not serve it. */
export function openApiDocument(groupVersion: string): unknown {
  const resources = apiResources[groupVersion];
  if (!resources) return undefined;
  const paths = Object.assign({}, ...resources.map((r) => resourcePaths(r, groupVersion))) as Record<string, unknown>;
  return {
    openapi: "3.0.0",
    info: { title: "Kubernetes", version: serverVersion.gitVersion },
    paths,
    components: { schemas: {} },
  };
}

function hashOf(document: unknown): string {
  return createHash("sha512").update(JSON.stringify(document)).digest("hex").toUpperCase();
}

/** /openapi/v3: each group-version's document URL, with the hash of its content. */
export function openApiIndex(): unknown {
  const entries = Object.keys(apiResources).map((gv) => [
    groupVersionPath(gv),
    { serverRelativeURL: `/openapi/v3/${groupVersionPath(gv)}?hash=${hashOf(openApiDocument(gv))}` },
  ]);
  return { paths: Object.fromEntries(entries) };
}

/** The document a /openapi/v3/... path asks for: the index, a group-version, or undefined (404). */
export function openApiAnswer(path: string): unknown {
  if (path === "/openapi/v3") return openApiIndex();
  const match = /^\/openapi\/v3\/(?:api\/(v1)|apis\/([^/]+\/[^/]+))$/.exec(path);
  const groupVersion = match?.[1] ?? match?.[2];
  return groupVersion ? openApiDocument(groupVersion) : undefined;
}
