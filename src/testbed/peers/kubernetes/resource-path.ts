// A Kubernetes API request path split into its parts: /api/v1[/namespaces/{ns}]/{resource}[/{name}[/{subresource}]]
// and the same under /apis/{group}/{version}. Pure; the router and the request's RequestInfo both read it.

export interface ResourcePath {
  /** "" for the core group. */
  readonly group: string;
  readonly version: string;
  readonly resource: string;
  readonly namespace?: string;
  readonly name?: string;
  readonly subresource?: string;
}

/** Splits a resource path; undefined when it is not one. */
export function parseResourcePath(pathname: string): ResourcePath | undefined {
  const parts = pathname
    .split("/")
    .filter((p) => p !== "")
    .map(decodeURIComponent);
  let group = "";
  let version: string | undefined;
  let rest: string[];
  if (parts[0] === "api") [version, rest] = [parts[1], parts.slice(2)];
  else if (parts[0] === "apis") [group, version, rest] = [parts[1] ?? "", parts[2], parts.slice(3)];
  else return undefined;
  if (!version || rest.length === 0) return undefined;
  let namespace: string | undefined;
  if (rest[0] === "namespaces" && rest.length >= 3) {
    namespace = rest[1];
    rest = rest.slice(2);
  }
  const [resource = "", name, subresource, ...extra] = rest;
  if (extra.length > 0) return undefined;
  return {
    group,
    version,
    resource,
    ...(namespace !== undefined ? { namespace } : {}),
    ...(name !== undefined ? { name } : {}),
    ...(subresource !== undefined ? { subresource } : {}),
  };
}
