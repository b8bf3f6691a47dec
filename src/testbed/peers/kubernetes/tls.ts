// The peer's TLS identity and its in-cluster style authentication: a throw-away self-signed certificate for
// localhost/127.0.0.1 (clients trust it as the cluster CA; it can also sign a client certificate) and one bearer token.
import { randomBytes, timingSafeEqual } from "node:crypto";
import { generateLocalTlsIdentity, type LocalTlsIdentity } from "../../support/tls-identity.js";

/** The peer's certificate: its own CA, for localhost, 127.0.0.1 and the in-cluster name, valid for `validDays` days. */
export function generatePeerTlsIdentity(validDays = 7, clientCertificate = false): Promise<LocalTlsIdentity> {
  return generateLocalTlsIdentity({
    commonName: "sef local kubernetes peer",
    validDays,
    extraDnsNames: ["kubernetes.default.svc"],
    ...(clientCertificate ? { clientCommonName: "system:node:sef-client" } : {}),
  });
}

/** A random bearer token, shaped like an opaque service-account token. */
export function generateBearerToken(): string {
  return randomBytes(32).toString("base64url");
}

/** True when the Authorization header carries exactly `token` as a Bearer credential. */
export function hasBearerToken(authorization: string | undefined, token: string): boolean {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? "");
  if (!match?.[1]) return false;
  const given = Buffer.from(match[1]);
  const expected = Buffer.from(token);
  return given.length === expected.length && timingSafeEqual(given, expected);
}
