// Claims-based security ($cbs put-token) checks of the local Event Hubs peer: local managed-identity JWTs and SAS tokens.
// Pure logic; never echoes a token in a reason.
import { createHmac, timingSafeEqual } from "node:crypto";
import { verifyLocalToken } from "../local-tokens.js";

/** The audience Entra ID tokens for Event Hubs carry. */
export const eventHubsTokenAudience = "https://eventhubs.azure.net";
export const jwtTokenType = "jwt";
export const sasTokenType = "servicebus.windows.net:sastoken";

export interface PutTokenRequest {
  /** The CBS `name`: the audience URL, e.g. `sb://host/hub` or `sb://host/hub/Partitions/0`. */
  readonly name: unknown;
  readonly type: unknown;
  readonly token: unknown;
}

export interface CbsAuthOptions {
  readonly hubName: string;
  /** When set, SAS signatures are verified with this key (the key named by `skn`). */
  readonly sharedAccessKey?: string;
  readonly nowMs: number;
}

/** On success, the entity path (lower case, no leading slash) the token grants access to. */
export type PutTokenCheck = { ok: true; entityPath: string } | { ok: false; reason: string };

/** Lower-cased entity path of an audience URL (`sb://host:port/Hub/Partitions/0` → `hub/partitions/0`). */
export function audiencePath(audience: string): string | undefined {
  try {
    return new URL(audience).pathname.replace(/^\/+/, "").replace(/\/+$/, "").toLowerCase();
  } catch {
    return undefined;
  }
}

/** Whether a token granted for `grantedPath` covers `entityPath` (same path or a sub-path). */
export function pathCovers(grantedPath: string, entityPath: string): boolean {
  const entity = entityPath.replace(/^\/+/, "").toLowerCase();
  return entity === grantedPath || entity.startsWith(grantedPath + "/");
}

function parseSas(token: string): Map<string, string> | undefined {
  const prefix = "SharedAccessSignature ";
  if (!token.startsWith(prefix)) return undefined;
  const fields = new Map<string, string>();
  for (const pair of token.slice(prefix.length).split("&")) {
    const eq = pair.indexOf("=");
    if (eq <= 0) return undefined;
    fields.set(pair.slice(0, eq), pair.slice(eq + 1));
  }
  return fields;
}

function checkSas(token: string, namePath: string, options: CbsAuthOptions): string | undefined {
  const fields = parseSas(token);
  const sr = fields?.get("sr");
  const sig = fields?.get("sig");
  const se = fields?.get("se");
  if (!fields || !sr || !sig || !se || !fields.get("skn")) return "SAS token is malformed (needs sr, sig, se, skn)";
  let resource: string;
  try {
    resource = decodeURIComponent(sr);
  } catch {
    return "SAS token sr is not URL-encoded";
  }
  const srPath = audiencePath(resource);
  if (srPath === undefined) return "SAS token sr is not a URL";
  const hub = options.hubName.toLowerCase();
  if (srPath !== "" && !pathCovers(srPath, hub) && !pathCovers(hub, srPath))
    return `SAS token is for another entity, not hub "${options.hubName}"`;
  if (!pathCovers(srPath, namePath)) return "SAS token sr does not cover the requested audience";
  const expirySeconds = Number(se);
  if (!Number.isFinite(expirySeconds) || expirySeconds * 1000 <= options.nowMs) return "SAS token has expired";
  if (options.sharedAccessKey !== undefined) {
    const expected = Buffer.from(createHmac("sha256", options.sharedAccessKey).update(`${sr}\n${se}`).digest("base64"));
    let given: Buffer;
    try {
      given = Buffer.from(decodeURIComponent(sig));
    } catch {
      return "SAS token signature is malformed";
    }
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) return "SAS token signature is invalid";
  }
  return undefined;
}

/** Checks one put-token request the way the service does: the token must be valid and name this hub. */
export function checkPutToken(request: PutTokenRequest, options: CbsAuthOptions): PutTokenCheck {
  if (typeof request.name !== "string" || request.name === "")
    return { ok: false, reason: "put-token has no name (audience)" };
  const namePath = audiencePath(request.name);
  if (namePath === undefined) return { ok: false, reason: "put-token name is not a URL" };
  const hub = options.hubName.toLowerCase();
  if (!pathCovers(hub, namePath))
    return { ok: false, reason: `put-token audience does not name hub "${options.hubName}"` };
  const token = Buffer.isBuffer(request.token) ? request.token.toString("utf8") : request.token;
  if (typeof token !== "string" || token === "") return { ok: false, reason: "put-token carries no token" };
  const type = Buffer.isBuffer(request.type) ? request.type.toString("utf8") : request.type;
  if (type !== jwtTokenType && type !== sasTokenType)
    return { ok: false, reason: `unsupported token type "${String(type)}"` };
  // The service reads the token by its shape, not by `type`: Microsoft's pure-Python AMQP client (azure-eventhub 5.11)
  // puts SAS tokens with type "jwt", and the service accepts them.
  if (token.startsWith("SharedAccessSignature ")) {
    const problem = checkSas(token, namePath, options);
    return problem === undefined ? { ok: true, entityPath: namePath } : { ok: false, reason: problem };
  }
  const check = verifyLocalToken(token, eventHubsTokenAudience, options.nowMs);
  return check.ok ? { ok: true, entityPath: namePath } : { ok: false, reason: check.reason };
}
