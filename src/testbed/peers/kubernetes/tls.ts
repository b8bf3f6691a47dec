// The peer's TLS identity and its in-cluster style authentication: a throw-away self-signed certificate for
// localhost/127.0.0.1 (clients trust it as the cluster CA) and one bearer token every request must carry.
import { randomBytes, timingSafeEqual } from "node:crypto";
import { generate } from "selfsigned";

export interface PeerTlsIdentity {
  readonly certPem: string;
  readonly keyPem: string;
}

/** An EC P-256 certificate that is its own CA, valid from an hour ago for `validDays` days. */
export async function generatePeerTlsIdentity(validDays = 7): Promise<PeerTlsIdentity> {
  const notBeforeDate = new Date(Date.now() - 3_600_000);
  const notAfterDate = new Date(notBeforeDate.getTime() + validDays * 86_400_000);
  const pems = await generate([{ name: "commonName", value: "sef local kubernetes peer" }], {
    keyType: "ec",
    curve: "P-256",
    algorithm: "sha256",
    notBeforeDate,
    notAfterDate,
    extensions: [
      { name: "basicConstraints", cA: true, critical: true },
      { name: "keyUsage", digitalSignature: true, keyCertSign: true, critical: true },
      { name: "extKeyUsage", serverAuth: true },
      { name: "subjectAltName", altNames: [{ type: 2, value: "localhost" }, { type: 2, value: "kubernetes.default.svc" }, { type: 7, ip: "127.0.0.1" }, { type: 7, ip: "::1" }] },
    ],
  });
  return { certPem: pems.cert, keyPem: pems.private };
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
