// Pure request checks of the simulated IMDS: routes, methods, `Metadata: true`, X-Forwarded-For, duplicate and api-version rules.
import type { IncomingHttpHeaders } from "node:http";
import {
  identityApiVersions,
  instanceApiVersions,
  newestVersions,
  scheduledEventsApiVersions,
} from "./api-versions.js";

export type ImdsRoute = "scheduledevents" | "compute" | "instance" | "token";
export type SimRoute = "sim-status" | "sim-document" | "sim-advance";

interface RouteSpec {
  methods: readonly string[];
  apiVersions: readonly string[];
}

const imdsRoutes: Record<string, { route: ImdsRoute } & RouteSpec> = {
  "/metadata/scheduledevents": {
    route: "scheduledevents",
    methods: ["GET", "POST"],
    apiVersions: scheduledEventsApiVersions,
  },
  "/metadata/instance/compute": { route: "compute", methods: ["GET"], apiVersions: instanceApiVersions },
  "/metadata/instance": { route: "instance", methods: ["GET"], apiVersions: instanceApiVersions },
  "/metadata/identity/oauth2/token": { route: "token", methods: ["GET"], apiVersions: identityApiVersions },
};

/** Test-only control API (not part of IMDS). */
const simRoutes: Record<string, { route: SimRoute; method: string }> = {
  "/__sim/status": { route: "sim-status", method: "GET" },
  "/__sim/document": { route: "sim-document", method: "POST" },
  "/__sim/advance": { route: "sim-advance", method: "POST" },
};

export interface Rejection {
  ok: false;
  status: number;
  body: Record<string, unknown>;
  headers?: Record<string, string>;
}

export type CheckedRequest =
  | { ok: true; kind: "imds"; route: ImdsRoute; path: string; apiVersion: string; query: URLSearchParams }
  | { ok: true; kind: "sim"; route: SimRoute; path: string }
  | Rejection;

export const apiVersionError =
  "Bad request. api-version is invalid or was not specified in the request. For more information refer to aka.ms/azureimds";

/** A 400 for a request header, worded as IMDS words it: OAuth's error shape on the token route, a bare error elsewhere. */
function headerRejection(isToken: boolean, tokenDescription: string, imdsError: string): Rejection {
  const body = isToken ? { error: "invalid_request", error_description: tokenDescription } : { error: imdsError };
  return { ok: false, status: 400, body };
}

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value.join(",") : value;
}

/** The path a request is routed and counted by: no query, no trailing slash (MSAL sends `/oauth2/token/`). */
export function normalizedPath(rawUrl: string): string {
  let path: string;
  try {
    path = new URL(rawUrl, "http://imds.invalid").pathname;
  } catch {
    return "/";
  }
  return path.length > 1 ? path.replace(/\/+$/, "") : path;
}

/** Classifies one request; `rawUrl` is the request target (path and query). */
export function checkRequest(method: string, rawUrl: string, headers: IncomingHttpHeaders): CheckedRequest {
  let url: URL;
  try {
    url = new URL(rawUrl, "http://imds.invalid");
  } catch {
    return { ok: false, status: 400, body: { error: "Bad request. Invalid request target." } };
  }
  const path = normalizedPath(rawUrl);
  const sim = simRoutes[path];
  if (sim) {
    if (method !== sim.method)
      return { ok: false, status: 405, body: { error: "Method not allowed" }, headers: { Allow: sim.method } };
    return { ok: true, kind: "sim", route: sim.route, path };
  }
  const spec = imdsRoutes[path];
  if (!spec) return { ok: false, status: 404, body: { error: "Not found" } };
  if (!spec.methods.includes(method)) {
    return {
      ok: false,
      status: 405,
      body: { error: "Method not allowed" },
      headers: { Allow: spec.methods.join(", ") },
    };
  }
  const isToken = spec.route === "token";
  if (header(headers, "x-forwarded-for") !== undefined)
    return headerRejection(
      isToken,
      "X-Forwarded-For header is not allowed",
      "Bad request. X-Forwarded-For header is not allowed.",
    );
  if (header(headers, "metadata")?.trim().toLowerCase() !== "true")
    return headerRejection(isToken, "Required metadata header not specified", "Required metadata header not specified");
  const seen = new Set<string>();
  for (const key of url.searchParams.keys()) {
    const normalized = key.toLowerCase();
    if (seen.has(normalized))
      return {
        ok: false,
        status: 400,
        body: { error: `Bad request. Query parameter '${key}' is specified more than once.` },
      };
    seen.add(normalized);
  }
  const apiVersion = url.searchParams.get("api-version");
  if (apiVersion === null || !spec.apiVersions.includes(apiVersion)) {
    return {
      ok: false,
      status: 400,
      body: { error: apiVersionError, "newest-versions": newestVersions(spec.apiVersions) },
    };
  }
  return { ok: true, kind: "imds", route: spec.route, path, apiVersion, query: url.searchParams };
}
