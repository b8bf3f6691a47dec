// Event Hubs' partition key hash (Jenkins lookup3 hashlittle2 folded to 16 bits), one implementation in the contract
// that the sink and the local peer share: it must give the service's mapping for the published vectors of Microsoft's
// SDKs (.NET PartitionResolverTests, copied by Java's PartitionResolverTests "to confirm cross-language compatibility").
import { describe, expect, it } from "vitest";
import { partitionIndexForKey } from "../../src/contract/partition-hash.js";

/** Partition key → the SDKs' 16-bit signed hash (the service maps a key to |hash % partitionCount|). */
const publishedVectors: ReadonlyArray<readonly [string, number]> = [
  ["7", -15263],
  ["131", 30562],
  ["7149583486996073602", 12977],
  ["FWfAT", -22341],
  ["sOdeEAsyQoEuEFPGerWO", -6503],
  ["FAyAIctPeCgmiwLKbJcyswoHglHVjQdvtBowLACDNORsYvOcLddNJYDmhAVkbyLOrHTKLneMNcbgWVlasVywOByANjs", 5226],
  [
    "1XYM6!(7(lF5wq4k4m*e$Nc!1ezLJv*1YK1Y-C^*&B$O)lq^iUkG(TNzXG;Zi#z2Og*Qq0#^*k):vXh$3,C7We7%W0meJ;b3,rQCg^J;^twXgs5E$$hWKxqp",
    23950,
  ],
  [
    "E(x;RRIaQcJs*P;D&jTPau-4K04oqr:lF6Z):ERpo&;9040qyV@G1_c9mgOs-8_8/10Fwa-7b7-yP!T-!IH&968)FWuI;(^g$2fN;)HJ^^yTn:",
    -29304,
  ],
  ["!c*_!I@1^c", 15372],
  ["p4*!jioeO/z-!-;w:dh", -3104],
  ["$0cb", 26269],
  ["-4189260826195535198", 453],
];

/** Partition counts Event Hubs allows (1–32 shared, up to 2000 dedicated), plus one above 32767 where |hash| shows whole. */
const partitionCounts = [...Array.from({ length: 32 }, (_, i) => i + 1), 100, 1024, 2000, 40_000];

describe("partition key hash against the SDKs' published vectors", () => {
  for (const [key, hash] of publishedVectors) {
    it(`"${key.length > 24 ? `${key.slice(0, 24)}…` : key}" hashes to ${hash}`, () => {
      for (const count of partitionCounts) {
        const expected = Math.abs(hash % count);
        expect(partitionIndexForKey(key, count), `${count} partitions`).toBe(expected);
      }
    });
  }
});
