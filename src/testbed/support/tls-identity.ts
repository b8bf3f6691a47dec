// Throwaway TLS identities for the local HTTPS peers (Logs Ingestion, Kubernetes API): a self-signed EC P-256
// certificate for localhost and 127.0.0.1 (plus any extra DNS names) that is its own CA, so a client trusts it by
// adding it as one (`caCertFile`, NODE_EXTRA_CA_CERTS, a kubeconfig's certificate-authority-data).
import { generate } from "selfsigned";

export interface LocalTlsIdentity {
  readonly certPem: string;
  readonly keyPem: string;
  /** A client certificate signed by this one (when asked for with `clientCommonName`). */
  readonly client?: { readonly certPem: string; readonly keyPem: string };
}

export interface LocalTlsOptions {
  /** The certificate's common name (which peer it is). */
  readonly commonName: string;
  /** Valid from an hour ago for this many days. */
  readonly validDays: number;
  /** DNS names besides localhost. */
  readonly extraDnsNames?: readonly string[];
  /** Also issue a client certificate with this common name, signed by the identity (for mutual TLS). */
  readonly clientCommonName?: string;
}

export async function generateLocalTlsIdentity(options: LocalTlsOptions): Promise<LocalTlsIdentity> {
  const notBeforeDate = new Date(Date.now() - 3_600_000);
  const notAfterDate = new Date(notBeforeDate.getTime() + options.validDays * 86_400_000);
  const dnsNames = ["localhost", ...(options.extraDnsNames ?? [])].map((value) => ({ type: 2 as const, value }));
  const pems = await generate([{ name: "commonName", value: options.commonName }], {
    keyType: "ec",
    curve: "P-256",
    algorithm: "sha256",
    notBeforeDate,
    notAfterDate,
    ...(options.clientCommonName
      ? {
          clientCertificate: {
            cn: options.clientCommonName,
            keyType: "ec" as const,
            algorithm: "sha256",
            notBeforeDate,
            notAfterDate,
          },
        }
      : {}),
    extensions: [
      { name: "basicConstraints", cA: true, critical: true },
      { name: "keyUsage", digitalSignature: true, keyCertSign: true, critical: true },
      // Issuing client certificates: a chain OpenSSL accepts for client auth needs the purpose on the issuer too.
      { name: "extKeyUsage", serverAuth: true, ...(options.clientCommonName ? { clientAuth: true } : {}) },
      { name: "subjectAltName", altNames: [...dnsNames, { type: 7, ip: "127.0.0.1" }, { type: 7, ip: "::1" }] },
    ],
  });
  const client =
    pems.clientcert && pems.clientprivate ? { client: { certPem: pems.clientcert, keyPem: pems.clientprivate } } : {};
  return { certPem: pems.cert, keyPem: pems.private, ...client };
}
