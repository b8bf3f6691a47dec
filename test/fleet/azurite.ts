// Starts Azurite's Blob service (npm `azurite`) as a child process on a free loopback port, in memory, telemetry off:
// the real Blob Storage peer for the fleet tests.
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";

const azuriteBlob = fileURLToPath(new URL("../../node_modules/azurite/dist/src/blob/main.js", import.meta.url));
/** Azurite's documented development account (a public, well-known key: not a secret). */
const devAccount = "devstoreaccount1";
const devKey = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

export interface Azurite {
  readonly connectionString: string;
  readonly child: ChildProcess;
  stop(): Promise<void>;
}

/**
 * Resolves once Azurite says it listens (its own log line, the observable state), within `timeoutMs`: generous, as a
 * loaded 2-core machine takes 10–20 s to load it (measured 13 s at load 26).
 */
export async function startAzurite(timeoutMs = 90_000): Promise<Azurite> {
  const child = spawn(
    process.execPath,
    [
      azuriteBlob,
      "--blobHost",
      "127.0.0.1",
      "--blobPort",
      "0",
      "--inMemoryPersistence",
      "--extentMemoryLimit",
      "4096",
      "--disableTelemetry",
      "--skipApiVersionCheck",
      "--loose",
    ],
    {
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let out = "";
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`Azurite did not start within ${timeoutMs} ms: ${out}`)),
      timeoutMs,
    );
    const onData = (d: Buffer): void => {
      out += d.toString();
      const m = /successfully listens on http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.once("exit", (code) => reject(new Error(`Azurite exited ${code}: ${out}`)));
  });
  child.stdout!.resume();
  child.stderr!.resume();
  return {
    connectionString: `DefaultEndpointsProtocol=http;AccountName=${devAccount};AccountKey=${devKey};BlobEndpoint=http://127.0.0.1:${port}/${devAccount};`,
    child,
    stop: async () => {
      if (child.exitCode !== null) return;
      child.kill("SIGKILL");
      await new Promise((resolve) => child.once("exit", resolve));
    },
  };
}
