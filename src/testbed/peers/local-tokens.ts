// Local managed-identity tokens: `sef-testbed simulate` mints them, the local Azure peers verify them.
// JWTs signed with HS256 and a fixed development key: this is a test fixture, never a real credential.
import { createHmac, timingSafeEqual } from "node:crypto";

const localSigningKey = "sef-local-development-signing-key";
export const localTokenIssuer = "https://sef-simulate.local/";

export interface LocalTokenClaims {
  aud: string;
  iss: string;
  iat: number;
  exp: number;
  /** The user-assigned identity's client id, or "system" for the system-assigned identity. */
  appid: string;
}

function base64url(data: Buffer | string): string {
  return Buffer.from(data).toString("base64url");
}

function sign(input: string): string {
  return createHmac("sha256", localSigningKey).update(input).digest("base64url");
}

/** Mints a token for `resource` (an audience such as `https://eventhubs.azure.net`), valid for `lifetimeSeconds`. */
export function mintLocalToken(
  resource: string,
  options: { clientId?: string; nowMs?: number; lifetimeSeconds?: number } = {},
): {
  token: string;
  claims: LocalTokenClaims;
} {
  const iat = Math.floor((options.nowMs ?? Date.now()) / 1000);
  const claims: LocalTokenClaims = {
    aud: resource,
    iss: localTokenIssuer,
    iat,
    exp: iat + (options.lifetimeSeconds ?? 3600),
    appid: options.clientId ?? "system",
  };
  const head = base64url(JSON.stringify({ alg: "HS256", typ: "JWT" }));
  const body = base64url(JSON.stringify(claims));
  return { token: `${head}.${body}.${sign(`${head}.${body}`)}`, claims };
}

export type TokenCheck = { ok: true; claims: LocalTokenClaims } | { ok: false; reason: string };

/** Normalizes an audience for comparison: lower case, no trailing slashes, no `/.default`. */
export function normalizeAudience(audience: string): string {
  return audience
    .trim()
    .toLowerCase()
    .replace(/\/\.default$/, "")
    .replace(/\/+$/, "");
}

/** Verifies signature, expiry and audience (compared after normalization). Never echoes the token. */
export function verifyLocalToken(token: string, expectedAudience: string, nowMs: number = Date.now()): TokenCheck {
  const parts = token.split(".");
  if (parts.length !== 3) return { ok: false, reason: "token is not a JWT" };
  const [head, body, signature] = parts as [string, string, string];
  const expected = Buffer.from(sign(`${head}.${body}`));
  const given = Buffer.from(signature);
  if (expected.length !== given.length || !timingSafeEqual(expected, given))
    return { ok: false, reason: "token signature is invalid" };
  let claims: LocalTokenClaims;
  try {
    claims = JSON.parse(Buffer.from(body, "base64url").toString("utf8")) as LocalTokenClaims;
  } catch {
    return { ok: false, reason: "token payload is not JSON" };
  }
  if (typeof claims.exp !== "number" || claims.exp * 1000 <= nowMs) return { ok: false, reason: "token has expired" };
  if (normalizeAudience(String(claims.aud)) !== normalizeAudience(expectedAudience)) {
    return { ok: false, reason: `token audience "${claims.aud}" is not "${expectedAudience}"` };
  }
  return { ok: true, claims };
}

/** The JSON body IMDS answers `/metadata/identity/oauth2/token` with, carrying a local token for `resource`. */
export function localTokenResponse(
  resource: string,
  options: { clientId?: string; nowMs?: number; lifetimeSeconds?: number } = {},
): Record<string, string> {
  const { token, claims } = mintLocalToken(resource, options);
  const lifetime = String(claims.exp - claims.iat);
  return {
    access_token: token,
    client_id: claims.appid,
    expires_in: lifetime,
    expires_on: String(claims.exp),
    ext_expires_in: lifetime,
    not_before: String(claims.iat),
    resource,
    token_type: "Bearer",
  };
}
