// The fleet state store against Azurite (through a Blob peer that counts, fails or holds chosen writes): every save
// guarded by the version its holder read, a batch's write in proportion to what it changed, and a journal continued by
// a new one while the snapshot is written beside the saves — a load at any moment reads the whole state.
import { BlobServiceClient, type ContainerClient } from "@azure/storage-blob";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BlobPartitionStateStore, maxJournalsBehind } from "../../src/fleet/journal-state-store.js";
import {
  changesBetween,
  emptyPartitionState,
  OwnershipLostError,
  type LoadedPartitionState,
} from "../../src/fleet/partition-state.js";
import { PartitionProcessor } from "../../src/fleet/partition-processor.js";
import { FleetMetrics } from "../../src/fleet/metrics.js";
import { silentLogger } from "../../src/agent/observability/logger.js";
import { snapshotBlob, startBlobFaultProxy, type BlobFaultProxy } from "./blob-fault-proxy.js";
import { startAzurite, type Azurite } from "./azurite.js";
import { fleetTransition, vm } from "./records.js";
import { waitFor } from "../helpers/wait.js";

let azurite: Azurite;

beforeAll(async () => {
  azurite = await startAzurite();
}, 120_000);

afterAll(async () => {
  await azurite?.stop();
}, 30_000);

describe("the partition state blob", () => {
  it("is saved against the version its holder read: a second holder of the partition, even in the same process, cannot overwrite a newer write", async () => {
    const container = BlobServiceClient.fromConnectionString(azurite.connectionString).getContainerClient("state-test");
    await container.createIfNotExists();
    const store = new BlobPartitionStateStore(container, "fleet-state/test", 5000);
    expect(await store.load("7")).toEqual({ state: emptyPartitionState(), etag: undefined });
    const first = await store.save("7", { ...emptyPartitionState(), sequenceNumber: 1 }, undefined);
    await expect(store.save("7", emptyPartitionState(), undefined)).rejects.toBeInstanceOf(OwnershipLostError);
    const a = await store.load("7");
    const b = await store.load("7");
    expect(a).toEqual({ state: { ...emptyPartitionState(), sequenceNumber: 1 }, etag: first });
    const newer = await store.save("7", { ...b.state, sequenceNumber: 2 }, b.etag);
    await expect(store.save("7", { ...a.state, sequenceNumber: 3 }, a.etag)).rejects.toBeInstanceOf(OwnershipLostError);
    expect(await store.load("7")).toEqual({ state: { ...emptyPartitionState(), sequenceNumber: 2 }, etag: newer });
  });
});

describe("the partition state journal", () => {
  /** A processor of partition `partitionId` with no rules (it folds and saves, notifies nobody) over `store`. */
  const processorOver = (store: BlobPartitionStateStore, partitionId: string) =>
    PartitionProcessor.open({
      partitionId,
      rules: [],
      updateIntervalMs: 0,
      staleClaimMs: 10_000,
      lateNoticeMs: 0,
      retry: { minDelayMs: 1, maxDelayMs: 1, giveUpAfterMs: 1000 },
      retainEndedMs: 7 * 24 * 3600_000,
      store,
      send: () => Promise.reject(new Error("no rule selects a target")),
      clock: { nowMs: () => Date.now(), monotonicMs: () => performance.now(), sleep: () => Promise.resolve() },
      logger: silentLogger(),
      metrics: new FleetMetrics([]),
      signal: new AbortController().signal,
    });
  const guid = (n: number) => `5a7e0000-0000-4000-8000-${String(n).padStart(12, "0")}`;
  /** A record of `eventId` from VM `reporter`, naming it and `alsoAffected` more VMs after it among Resources. */
  const record = (sequenceNumber: number, eventId: string, reporter: number, alsoAffected = 0) => ({
    body: fleetTransition(
      eventId,
      "Scheduled",
      vm(reporter),
      Array.from({ length: 1 + alsoAffected }, (_, i) => vm(reporter * 1000 + i)),
    ),
    sequenceNumber,
    offset: String(sequenceNumber),
  });

  /** What a test over the Blob fault peer gets: the peer, the container through it, a store and a processor over it. */
  interface OverPeer {
    readonly proxy: BlobFaultProxy;
    readonly container: ContainerClient;
    readonly store: BlobPartitionStateStore;
    readonly processor: PartitionProcessor;
    /** The partition's state as a new holder (another store) loads it. */
    readonly newHolderLoads: () => Promise<LoadedPartitionState>;
  }

  /** Runs `test` over a Blob fault peer in front of Azurite, on container `name`, partition `partitionId`; closes the peer. */
  async function overFaultPeer(name: string, partitionId: string, test: (over: OverPeer) => Promise<void>) {
    const proxy = await startBlobFaultProxy(azurite.connectionString);
    try {
      const container = await containerOver(proxy.connectionString, name);
      const store = new BlobPartitionStateStore(container, `fleet-state/${name}`, 5000);
      const processor = await processorOver(store, partitionId);
      const newHolderLoads = () =>
        new BlobPartitionStateStore(container, `fleet-state/${name}`, 5000).load(partitionId);
      await test({ proxy, container, store, processor, newHolderLoads });
    } finally {
      await proxy.close();
    }
  }

  it("writes in proportion to what a batch changed: one event of 250 is one small append, and a new holder reads it all back", async () => {
    await overFaultPeer("journal", "3", async ({ proxy, store, processor }) => {
      // 250 events, each opened by a VM of its own (within the per-reporter and partition rates).
      await processor.processBatch(Array.from({ length: 250 }, (_, i) => record(i, guid(i), i)));
      const first = { bytes: proxy.writtenBytes("state"), writes: proxy.writes("state")["201"] ?? 0 };
      expect(first.bytes).toBeGreaterThan(100_000); // the whole state, once: the first snapshot
      const stale = await store.load("3");
      await processor.processBatch([record(250, guid(7), 300)]);
      // One append of the one event the batch changed, not the 250 of the partition.
      expect(proxy.writes("state")["201"]).toBe(first.writes + 1);
      expect(proxy.writtenBytes("state") - first.bytes).toBeLessThan(first.bytes / 100);
      // A restart or a new owner: the snapshot and the journal give the whole state.
      const { state } = await store.load("3");
      expect(state.sequenceNumber).toBe(250);
      expect(Object.keys(state.events)).toHaveLength(250);
      expect(Object.keys(state.events[guid(7)]!.vms).sort()).toEqual(["agent-web-vmss_300", "agent-web-vmss_7"]);
      // A holder that read before the append can no longer write.
      await expect(
        store.save("3", stale.state, stale.etag, changesBetween(stale.state, stale.state)),
      ).rejects.toBeInstanceOf(OwnershipLostError);
    });
  });

  it("continues a journal that outgrew its snapshot with a new snapshot and journal, losing nothing", async () => {
    const container = BlobServiceClient.fromConnectionString(azurite.connectionString).getContainerClient("compact");
    await container.createIfNotExists();
    const store = new BlobPartitionStateStore(container, "fleet-state/compact", 5000);
    const processor = await processorOver(store, "5");
    // One event that 20 VMs join one batch at a time, each naming 150 more VMs: each append carries the whole event, so
    // the journal outgrows the snapshot (and its 64 KiB floor).
    for (let i = 0; i < 20; i++) await processor.processBatch([record(i, guid(1), i + 1, 150)]);
    await store.settled(5000); // the snapshot written beside the saves
    expect(await journalsOf(container, "fleet-state/compact/")).toHaveLength(1); // the old journals were deleted
    const snapshot = JSON.parse(
      (await container.getBlobClient("fleet-state/compact/5.json").downloadToBuffer()).toString(),
    );
    expect(Object.keys(snapshot.events[guid(1)].vms).length).toBeGreaterThan(1); // compacted after the first save
    const { state } = await store.load("5");
    expect(state.sequenceNumber).toBe(19);
    expect(Object.keys(state.events[guid(1)]!.vms)).toHaveLength(20);
    expect(state.events[guid(1)]!.resources).toHaveLength(20 * 151);
  });
  it("does not wait for the snapshot: while it is being written the saves go on into the next journal, a load reads the whole state through the chain, and a holder that read before the seal can no longer write", async () => {
    await overFaultPeer("beside", "2", async ({ proxy, container, store, processor, newHolderLoads }) => {
      await processor.processBatch([record(0, guid(1), 1, 150)]); // the first snapshot, written by the save itself
      const before = await store.load("2");
      const slowSnapshots = proxy.holdWrites("state", snapshotBlob);
      for (let i = 1; i < 20; i++) await processor.processBatch([record(i, guid(1), i + 1, 150)]);
      // Every save answered while the one snapshot write beside them waits; the first journal is sealed.
      expect(slowSnapshots.held()).toBe(1);
      expect((await journalsOf(container, "fleet-state/beside/")).length).toBeGreaterThanOrEqual(2);
      const midway = (await newHolderLoads()).state;
      expect(midway.sequenceNumber).toBe(19);
      expect(Object.keys(midway.events[guid(1)]!.vms)).toHaveLength(20);
      await expect(
        store.save("2", before.state, before.etag, changesBetween(before.state, before.state)),
      ).rejects.toBeInstanceOf(OwnershipLostError);

      slowSnapshots.release();
      await store.settled(5000);
      expect(proxy.writes("state", snapshotBlob)).toEqual({ "201": 2 });
      expect(await journalsOf(container, "fleet-state/beside/")).toHaveLength(1);
      // The next snapshot is written against the one that landed (its ETag followed, not the first's).
      for (let i = 20; i < 40; i++) await processor.processBatch([record(i, guid(1), i + 1, 150)]);
      await store.settled(5000);
      expect(proxy.writes("state", snapshotBlob)["412"]).toBeUndefined();
      expect(proxy.writes("state", snapshotBlob)["201"]).toBeGreaterThanOrEqual(3);
      expect(await journalsOf(container, "fleet-state/beside/")).toHaveLength(1);
      const { state } = await newHolderLoads();
      expect(state.sequenceNumber).toBe(39);
      expect(Object.keys(state.events[guid(1)]!.vms)).toHaveLength(40);
    });
  });

  it(`keeps the chain whole when snapshots cannot be written, and writes one itself once ${maxJournalsBehind} journals behind`, async () => {
    await overFaultPeer("behind", "4", async ({ proxy, container, store, processor, newHolderLoads }) => {
      await processor.processBatch([record(0, guid(1), 1, 150)]);
      proxy.failNextWrites("state", maxJournalsBehind, snapshotBlob);
      let sequence = 1;
      const save = () => processor.processBatch([record(sequence, guid(1), sequence + 1, 150)]);
      const wholeStateReadBack = async () => {
        const { state } = await newHolderLoads();
        expect(state.sequenceNumber).toBe(sequence);
        expect(Object.keys(state.events[guid(1)]!.vms)).toHaveLength(sequence + 1);
      };
      while ((proxy.writes("state", snapshotBlob)["503"] ?? 0) < maxJournalsBehind) {
        expect(sequence).toBeLessThan(200);
        await save();
        await store.settled(5000); // each snapshot written beside the saves has failed before the next save
        await wholeStateReadBack(); // whatever failed, a new holder reads every save so far
        sequence++;
      }
      // The snapshot's journal and the four that continue it.
      expect(await journalsOf(container, "fleet-state/behind/")).toHaveLength(maxJournalsBehind + 1);

      // The next snapshot is written in the save's own way: the save waits for it.
      const slowSnapshots = proxy.holdWrites("state", snapshotBlob);
      for (;;) {
        expect(sequence).toBeLessThan(200);
        let answered = false;
        const saved = save().then(() => (answered = true));
        await waitFor("the save answered or its snapshot write held", () => answered || slowSnapshots.held() > 0);
        if (slowSnapshots.held() > 0) {
          expect(answered).toBe(false);
          slowSnapshots.release();
          await saved;
          break;
        }
        sequence++;
      }
      await wholeStateReadBack();
      expect(proxy.writes("state", snapshotBlob)).toEqual({ "201": 2, "503": maxJournalsBehind });
      expect(await journalsOf(container, "fleet-state/behind/")).toHaveLength(1);
    });
  });
  it("keeps every journal a snapshot or a seal names when the write naming it took effect but was answered with an error (a timeout after the fact): a new holder still loads", async () => {
    await overFaultPeer("doubt", "6", async ({ proxy, store, processor, newHolderLoads }) => {
      // The first snapshot written, its answer lost: the save fails, the snapshot names a journal that must exist.
      proxy.failAfterWriting("state", 1, snapshotBlob);
      await expect(processor.processBatch([record(0, guid(1), 1, 150)])).rejects.toMatchObject({ statusCode: 503 });
      expect((await newHolderLoads()).state.sequenceNumber).toBe(0);

      // A journal's seal naming its successor written, its answer lost: the successor must exist too.
      const fresh = await processorOver(store, "6");
      proxy.failAfterWriting("state", 1, (path) => path.includes(".journal-"), '"sealed":true');
      let sequence = 1;
      while ((proxy.writes("state")["503"] ?? 0) < 2) {
        expect(sequence).toBeLessThan(200);
        await fresh.processBatch([record(sequence, guid(1), sequence + 1, 150)]).catch(() => undefined);
        sequence++;
      }
      const { state } = await newHolderLoads();
      expect(state.sequenceNumber).toBe(sequence - 1); // the batch whose answer was lost is in the chain
      expect(Object.keys(state.events[guid(1)]!.vms)).toHaveLength(sequence);
    });
  });
});

/** A container reached through `connectionString`, created, with no retries of the SDK's own (the store's are counted). */
async function containerOver(connectionString: string, name: string): Promise<ContainerClient> {
  const container = BlobServiceClient.fromConnectionString(connectionString, {
    retryOptions: { maxTries: 1 },
  }).getContainerClient(name);
  await container.createIfNotExists();
  return container;
}

/** The journal blobs under `prefix`. */
async function journalsOf(container: ContainerClient, prefix: string): Promise<string[]> {
  const names: string[] = [];
  for await (const blob of container.listBlobsFlat({ prefix }))
    if (blob.name.includes(".journal-")) names.push(blob.name);
  return names;
}
