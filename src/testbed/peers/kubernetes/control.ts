// The testbed's HTTP control surface under /__peer/ (bearer token required, never logged, never faulted; no path a
// real API server has): read the logs and stats, install and remove fault rules, and seed objects and rules into a
// running peer, so a peer started by `sef-testbed emulate kubernetes` can be driven like one started in-process.
import type { ApiResponse } from "./api.js";
import type { FaultRule } from "./faults.js";
import type { KubernetesSeed } from "./seed.js";
import type { KubernetesPeerState } from "./state.js";

export const controlPrefix = "/__peer/";

export function isControlPath(pathname: string): boolean {
  return pathname.startsWith(controlPrefix);
}

function ok(body: unknown, code = 200): ApiResponse {
  return { code, body };
}

function refused(code: number, error: string): ApiResponse {
  return { code, body: { error } };
}

function isObject(body: unknown): body is Record<string, unknown> {
  return typeof body === "object" && body !== null && !Array.isArray(body);
}

const reads: Readonly<Record<string, (state: KubernetesPeerState) => unknown>> = {
  stats: (state) => state.stats(),
  requests: (state) => state.requests(),
  evictions: (state) => state.evictions(),
  "node-writes": (state) => state.nodeWrites(),
  "returned-pods": (state) => state.returnedPods(),
  faults: (state) => state.faults(),
};

function faults(state: KubernetesPeerState, method: string, id: string | undefined, body: unknown): ApiResponse {
  if (method === "POST" && id === undefined) {
    if (!isObject(body)) return refused(400, "POST /__peer/faults takes one fault rule as a JSON object");
    return ok({ id: state.injectFault(body as unknown as FaultRule) }, 201);
  }
  if (method === "DELETE" && id === undefined) {
    state.clearFaults();
    return ok({ removed: "all" });
  }
  if (method === "DELETE" && id !== undefined)
    return state.removeFault(id) ? ok({ removed: id }) : refused(404, `no fault rule ${id}`);
  return refused(405, `${method} is not served on /__peer/faults`);
}

/** The answer to a control request (`body`: the parsed JSON body, if any); errors in the input are 400s. */
export function controlAnswer(
  state: KubernetesPeerState,
  method: string,
  pathname: string,
  body: unknown,
): ApiResponse {
  const [what = "", id, ...extra] = pathname.slice(controlPrefix.length).split("/").map(decodeURIComponent);
  if (extra.length > 0) return refused(404, `no control path ${pathname}`);
  try {
    if (what === "faults" && method !== "GET") return faults(state, method, id, body);
    if (what === "seed") {
      if (method !== "POST") return refused(405, "the seed is POSTed");
      if (!isObject(body))
        return refused(
          400,
          "POST /__peer/seed takes one seed object (nodes, pods, leases, faults, returningPods, ...)",
        );
      state.seed(body as KubernetesSeed);
      return ok({ seeded: true }, 201);
    }
    const read = reads[what];
    if (read && id === undefined)
      return method === "GET" ? ok(read(state)) : refused(405, `${pathname} is read with GET`);
    return refused(404, `no control path ${pathname}`);
  } catch (error) {
    return refused(400, error instanceof Error ? error.message : String(error));
  }
}
