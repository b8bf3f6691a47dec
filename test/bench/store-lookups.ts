// Benchmark: outbox depth, oldest age and bytes lookups (what /metrics, heartbeats and every drained batch ask) at
// backlogs from 1k to 1M records: they read counters kept in the same transactions, so they should stay flat.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { openOutbox } from "../helpers/outbox.js";
import type { HeartbeatRecord } from "../../src/contract/record.js";
import { unknownVmIdentity } from "../../src/contract/record.js";

export interface LookupFigures {
  readonly backlog: number;
  /** Mean time of one `depth(sink)` (pending count + oldest pending age), in microseconds. */
  readonly depthMicroseconds: number;
  /** Mean time of one `bytesInOutbox`, in microseconds. */
  readonly bytesMicroseconds: number;
  /** Seconds it took to fill the backlog (not a target; context for the figures). */
  readonly fillSeconds: number;
}

function record(i: number): HeartbeatRecord {
  const at = new Date(1_700_000_000_000 + i).toISOString();
  return {
    RecordId: `r${i}`,
    RecordType: "Heartbeat",
    TimeGenerated: at,
    ObservedAt: at,
    ...unknownVmIdentity,
    AgentId: "bench",
    AgentVersion: "b",
    Detail: "",
  };
}

function meanMicroseconds(calls: number, body: () => unknown): number {
  const started = performance.now();
  for (let i = 0; i < calls; i++) body();
  return Number((((performance.now() - started) * 1000) / calls).toFixed(2));
}

/** Fills one store up to each backlog size in turn (two sinks: one drained, one down) and times the lookups at each. */
export async function benchStoreLookups(
  backlogs: readonly number[] = [1_000, 10_000, 100_000, 1_000_000],
): Promise<LookupFigures[]> {
  const dir = mkdtempSync(join(tmpdir(), "sef-bench-store-"));
  const store = openOutbox({ dataDir: dir, maxOutboxBytes: Number.MAX_SAFE_INTEGER });
  store.registerSinks(["down"]);
  const figures: LookupFigures[] = [];
  let filled = 0;
  let fillSeconds = 0;
  try {
    for (const backlog of backlogs) {
      const started = performance.now();
      while (filled < backlog) {
        const n = Math.min(20_000, backlog - filled);
        store.append(
          Array.from({ length: n }, (_, k) => record(filled + k)),
          Date.now(),
        );
        filled += n;
      }
      fillSeconds += (performance.now() - started) / 1000;
      if (store.depth("down").records !== backlog)
        throw new Error(`depth ${store.depth("down").records}, expected ${backlog}`);
      figures.push({
        backlog,
        depthMicroseconds: meanMicroseconds(2000, () => store.depth("down")),
        bytesMicroseconds: meanMicroseconds(2000, () => store.bytesInOutbox),
        fillSeconds: Number(fillSeconds.toFixed(1)),
      });
    }
    return figures;
  } finally {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const sizes = process.argv.slice(2).map(Number);
  console.log(JSON.stringify(await benchStoreLookups(sizes.length > 0 ? sizes : undefined)));
}
