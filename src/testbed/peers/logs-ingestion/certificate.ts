// A throwaway TLS identity for the local Logs Ingestion peer: a self-signed certificate for localhost and
// 127.0.0.1 that clients trust by adding it as a CA (`caCertFile` setting or NODE_EXTRA_CA_CERTS).
import { generate } from "selfsigned";

export interface LocalTlsIdentity {
  readonly certPem: string;
  readonly keyPem: string;
}

/** Generates an EC P-256 certificate valid from an hour ago for `validDays` days. */
export async function generateLocalTlsIdentity(validDays = 30): Promise<LocalTlsIdentity> {
  const notBeforeDate = new Date(Date.now() - 3_600_000);
  const notAfterDate = new Date(notBeforeDate.getTime() + validDays * 86_400_000);
  const pems = await generate([{ name: "commonName", value: "sef local logs ingestion peer" }], {
    keyType: "ec",
    curve: "P-256",
    algorithm: "sha256",
    notBeforeDate,
    notAfterDate,
    extensions: [
      { name: "basicConstraints", cA: true, critical: true },
      { name: "keyUsage", digitalSignature: true, keyCertSign: true, critical: true },
      { name: "extKeyUsage", serverAuth: true },
      { name: "subjectAltName", altNames: [{ type: 2, value: "localhost" }, { type: 7, ip: "127.0.0.1" }, { type: 7, ip: "::1" }] },
    ],
  });
  return { certPem: pems.cert, keyPem: pems.private };
}
