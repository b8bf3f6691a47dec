// Instance metadata routes of the simulated IMDS: `instance` and `instance/compute` (the asking VM picked by a
// test-only header, with its tags) and the managed-identity token endpoint.
import type { IncomingMessage, ServerResponse } from "node:http";
import { localTokenResponse } from "../../peers/local-tokens.js";
import { computeFor } from "../compute.js";
import { sendJson } from "../http.js";
import type { SimState } from "../sim-state.js";

/** Test-only request header (not part of IMDS): which simulated VM is asking, for `/metadata/instance*`. */
export const simVmHeader = "x-sef-sim-vm";
const tokenLifetimeSeconds = 3599;

export function serveInstanceMetadata(
  state: SimState,
  req: IncomingMessage,
  res: ServerResponse,
  route: "compute" | "instance",
): string {
  const vmName = req.headers[simVmHeader];
  const name = typeof vmName === "string" && vmName.trim() !== "" ? vmName.trim() : state.scenario.vm.name;
  const compute = computeFor(state.scenario.vm, name, state.vmTags.get(name));
  sendJson(res, 200, route === "compute" ? compute : { compute, network: { interface: [] } });
  return "200";
}

export function serveToken(state: SimState, res: ServerResponse, query: URLSearchParams, nowMs: number): string {
  if (state.tokenFault.count > 0) {
    state.tokenFault.count -= 1;
    const { status } = state.tokenFault;
    state.faultsServed[`token:${status}`] = (state.faultsServed[`token:${status}`] ?? 0) + 1;
    sendJson(res, status, {
      error: "temporarily_unavailable",
      error_description: `test fault: the token endpoint answered ${status}`,
    });
    return String(status);
  }
  const resource = query.get("resource");
  if (!resource) {
    sendJson(res, 400, {
      error: "invalid_request",
      error_description: "Required query variable 'resource' is missing",
    });
    return "400";
  }
  const clientId = query.get("client_id") ?? query.get("object_id") ?? query.get("msi_res_id") ?? undefined;
  // Without a client id the system-assigned identity answers; the body names it by the VM's id.
  const body = localTokenResponse(resource, { clientId, nowMs, lifetimeSeconds: tokenLifetimeSeconds });
  sendJson(res, 200, { ...body, client_id: clientId ?? computeFor(state.scenario.vm).vmId });
  return "200";
}
