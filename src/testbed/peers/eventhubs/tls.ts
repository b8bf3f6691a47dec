// A throw-away TLS identity for the local Event Hubs peer: a self-signed certificate for localhost/127.0.0.1,
// written to a PEM file that clients trust through NODE_EXTRA_CA_CERTS.
import { mkdtemp, writeFile, mkdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { isIP } from "node:net";
import { dirname, join, resolve } from "node:path";
import { generate } from "selfsigned";

export interface LocalTlsIdentity {
  readonly keyPem: string;
  readonly certPem: string;
  /** Where the certificate (PEM) was written. */
  readonly caCertPath: string;
}

/**
 * Generates the certificate (SAN: DNS localhost, IP 127.0.0.1, ::1 and `listenHost` when it is another address, e.g.
 * 127.0.0.2 for a peer on the AMQPS port 5671) and writes it to `caCertPath` or a temp file.
 */
export async function createLocalTlsIdentity(caCertPath?: string, listenHost?: string): Promise<LocalTlsIdentity> {
  const extraAltNames: Array<{ type: 7; ip: string } | { type: 2; value: string }> =
    listenHost && isIP(listenHost) !== 0 && !["127.0.0.1", "::1", "0.0.0.0", "::"].includes(listenHost)
      ? [{ type: 7 as const, ip: listenHost }]
      : listenHost && isIP(listenHost) === 0 && listenHost !== "localhost"
        ? [{ type: 2 as const, value: listenHost }]
        : [];
  const now = Date.now();
  const pems = await generate([{ name: "commonName", value: "localhost" }], {
    keyType: "ec",
    curve: "P-256",
    algorithm: "sha256",
    notBeforeDate: new Date(now - 60_000),
    notAfterDate: new Date(now + 7 * 24 * 3600_000),
    extensions: [
      { name: "basicConstraints", cA: true },
      { name: "keyUsage", digitalSignature: true, keyCertSign: true, keyEncipherment: true },
      { name: "extKeyUsage", serverAuth: true },
      {
        name: "subjectAltName",
        altNames: [
          { type: 2, value: "localhost" },
          { type: 7, ip: "127.0.0.1" },
          { type: 7, ip: "::1" },
          ...extraAltNames,
        ],
      },
    ],
  });
  const path = caCertPath ? resolve(caCertPath) : join(await mkdtemp(join(tmpdir(), "sef-eventhubs-")), "ca.pem");
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, pems.cert, { mode: 0o644 });
  return { keyPem: pems.private, certPem: pems.cert, caCertPath: path };
}
