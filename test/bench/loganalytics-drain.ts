// Benchmark: drains a backlog of transition records to the local Logs Ingestion peer through the Log Analytics sink
// (real LogsIngestionClient, HTTPS, gzip, local bearer tokens), batch by batch as the drain loop would.
import { pathToFileURL } from "node:url";
import { transitionRecordId } from "../../src/contract/record-id.js";
import type { TransitionRecord } from "../../src/contract/record.js";
import { startLogsIngestionEmulator } from "../../src/emulators/logs-ingestion/index.js";
import { mintLocalToken } from "../../src/emulators/local-tokens.js";
import { silentLogger } from "../../src/observability/logger.js";
import { LogAnalyticsSink } from "../../src/sinks/loganalytics/sink.js";
import { logAnalyticsSettingsSchema } from "../../src/sinks/loganalytics/settings.js";
import type { OutboxEntry } from "../../src/sinks/sink.js";

function backlog(records: number): OutboxEntry[] {
  const vmId = "6c5d0d4a-1111-2222-3333-444455556666";
  const startMs = Date.now() - 3_600_000;
  return Array.from({ length: records }, (_, i) => {
    const EventId = `A5C1E7F3-${String(i).padStart(4, "0")}-4B1D-9C1B-${String(i).padStart(12, "0")}`;
    const record: TransitionRecord = {
      RecordId: transitionRecordId(vmId, EventId, "Scheduled"),
      RecordType: "Transition",
      TimeGenerated: new Date(startMs + i).toISOString(),
      EventId,
      EventStatus: "Scheduled",
      PreviousStatus: "",
      EventType: "Reboot",
      ResourceType: "VirtualMachine",
      Resources: ["web-vmss_3", "web-vmss_7"],
      NotBefore: new Date(startMs + 900_000).toISOString(),
      Description: "Virtual machine is going to be restarted as requested by authorized user.",
      EventSource: "User",
      DurationInSeconds: -1,
      DocumentIncarnation: i + 1,
      AffectsThisVm: true,
      ObservationGap: false,
      VmName: "web-vmss_3",
      VmId: vmId,
      VmResourceId: "/subscriptions/0000/resourceGroups/rg-web/providers/Microsoft.Compute/virtualMachineScaleSets/web-vmss/virtualMachines/3",
      SubscriptionId: "00000000-0000-0000-0000-000000000000",
      ResourceGroup: "rg-web",
      Location: "westeurope",
      VmScaleSetName: "web-vmss",
      Zone: "2",
      AgentVersion: "0.1.0",
    };
    return { seq: i + 1, record, json: JSON.stringify(record) };
  });
}

/** Drains `records` records to an in-process peer; the figures cover the drain only (not building the backlog). */
export async function benchLogAnalyticsDrain(
  records = 100_000,
): Promise<{ recordsPerSecond: number; megabytesPerSecond: number; records: number; seconds: number }> {
  const peer = await startLogsIngestionEmulator();
  const sink = new LogAnalyticsSink({
    settings: logAnalyticsSettingsSchema.parse({ endpoint: peer.endpoint, ruleId: peer.ruleId, caCertFile: peer.caCertPath }),
    logger: silentLogger(),
    credential: {
      getToken: async () => {
        const { token, claims } = mintLocalToken("https://monitor.azure.com");
        return { token, expiresOnTimestamp: claims.exp * 1000, tokenType: "Bearer" as const };
      },
    },
  });
  const all = backlog(records);
  const bytes = all.reduce((n, e) => n + Buffer.byteLength(e.json), 0);
  try {
    const startedMs = performance.now();
    let queue: readonly OutboxEntry[] = all;
    while (queue.length > 0) {
      const batch = queue.slice(0, sink.maxBatchRecords);
      const result = await sink.send(batch, new AbortController().signal);
      if (result.kind !== "ok" || result.rejected) throw new Error(`bench send failed: ${JSON.stringify(result)}`);
      queue = queue.slice(batch.length);
    }
    const seconds = (performance.now() - startedMs) / 1000;
    if (peer.rows().length !== records) throw new Error(`peer holds ${peer.rows().length} rows, expected ${records}`);
    return { recordsPerSecond: Math.round(records / seconds), megabytesPerSecond: bytes / 1e6 / seconds, records, seconds };
  } finally {
    await sink.close();
    await peer.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  console.log(JSON.stringify(await benchLogAnalyticsDrain(Number(process.argv[2] ?? 100_000))));
}
