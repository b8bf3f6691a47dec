// Microsoft's Python LogsIngestionClient with ManagedIdentityCredential, unmodified (Debian's python3-azure), against
// the IMDS simulator (tokens, via AZURE_POD_IDENTITY_AUTHORITY_HOST) and the local Logs Ingestion peer (HTTPS).
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  startLogsIngestionEmulator,
  type LogsIngestionEmulator,
  type LogsIngestionEmulatorOptions,
} from "../../src/testbed/peers/logs-ingestion/index.js";
import { startSimulator, type Simulator } from "../../src/testbed/simulator/index.js";
import { transitionRecord } from "../loganalytics/helpers.js";
import { runPythonJson } from "./python.js";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface UploadResult {
  uploaded?: number;
  failures?: Array<{ status: number; code: string | null; rows: number }>;
  error?: { status: number; message: string };
}

async function setup(options: LogsIngestionEmulatorOptions = {}): Promise<{
  peer: LogsIngestionEmulator;
  simulator: Simulator;
  upload: (rows: unknown[], clientId?: string) => Promise<UploadResult>;
}> {
  const peer = await startLogsIngestionEmulator(options);
  cleanups.push(() => peer.close());
  const simulator = await startSimulator({ scenario: "idle" });
  cleanups.push(() => simulator.close());
  const dir = mkdtempSync(join(tmpdir(), "sef-interop-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const upload = async (rows: unknown[], clientId?: string): Promise<UploadResult> => {
    const file = join(dir, `rows-${randomBytes(4).toString("hex")}.json`);
    writeFileSync(file, JSON.stringify(rows));
    return runPythonJson<UploadResult>(
      "logs_ingestion_client.py",
      [peer.endpoint, peer.ruleId, peer.streamName, file, ...(clientId ? [clientId] : [])],
      {
        timeoutMs: 90_000,
        env: { AZURE_POD_IDENTITY_AUTHORITY_HOST: simulator.url, REQUESTS_CA_BUNDLE: peer.caCertPath },
      },
    );
  };
  return { peer, simulator, upload };
}

const tokenRequests = (simulator: Simulator): number =>
  Object.entries(simulator.status().requests)
    .filter(([path]) => path.replace(/\/$/, "") === "/metadata/identity/oauth2/token")
    .reduce((n, [, byStatus]) => n + (byStatus["200"] ?? 0), 0);

describe("azure-monitor-ingestion (Python) with ManagedIdentityCredential → IMDS simulator + local Logs Ingestion peer", () => {
  it("uploads rows gzipped in chunks under 1 MB with a managed-identity token: every row stored, nothing dropped, no 413", async () => {
    const { peer, simulator, upload } = await setup();
    // About 2.5 MB of JSON: the client must split it into several requests.
    const rows = Array.from({ length: 1200 }, (_, i) =>
      transitionRecord(i, { RecordId: `py-${i}`, Description: randomBytes(1000).toString("base64") }),
    );
    expect(await upload(rows)).toEqual({ uploaded: 1200, failures: [] });
    expect(peer.rows().map((r) => r.RecordId)).toEqual(rows.map((r) => r.RecordId));
    expect(peer.rows()[0]).toEqual(JSON.parse(JSON.stringify(rows[0])));
    expect(peer.droppedColumns().total).toBe(0);
    const requests = peer.requests();
    expect(requests.count).toBeGreaterThanOrEqual(3);
    expect(requests.statuses).toEqual({ "204": requests.count });
    expect(tokenRequests(simulator)).toBeGreaterThanOrEqual(1);
  }, 120_000);

  it("sees 204 for a row with an undeclared column, as against Azure: the drop is visible only in the peer's counters", async () => {
    const { peer, upload } = await setup();
    expect(await upload([{ ...transitionRecord(1), Undeclared: "x" }])).toEqual({ uploaded: 1, failures: [] });
    expect(peer.rows()).toHaveLength(1);
    expect(peer.droppedColumns()).toMatchObject({ undeclaredColumns: { Undeclared: 1 }, total: 1 });
  }, 120_000);

  it("gets 403 for a user-assigned identity without access to the rule", async () => {
    const { peer, upload } = await setup({ authorizedClientIds: ["system"] });
    expect(await upload([transitionRecord(1)], "00000000-0000-0000-0000-0000000000aa")).toEqual({
      uploaded: 1,
      failures: [{ status: 403, code: "OperationFailed", rows: 1 }],
    });
    expect(peer.rows()).toHaveLength(0);
  }, 120_000);
});
