// Our partition mapping must equal the one the Event Hubs SDK uses to reproduce the service's (internal to the SDK).
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { propertyParams } from "../helpers/seed.js";
import { mapPartitionKeyToId } from "../../node_modules/@azure/event-hubs/dist/esm/impl/partitionKeyToIdMapper.js";
import { partitionIndexForKey } from "../../src/contract/partition-hash.js";

describe("partitionIndexForKey", () => {
  it("matches the SDK's service-equivalent mapping for EventIds and any string, every length and partition count", () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.uuid(), fc.string({ maxLength: 40 }), fc.string({ unit: "grapheme", maxLength: 30 })),
        fc.integer({ min: 1, max: 32 }),
        (key, count) => {
          expect(partitionIndexForKey(key, count)).toBe(mapPartitionKeyToId(key, count));
        },
      ),
      propertyParams(3501, 2000),
    );
  });

  it("spreads keys over all partitions", () => {
    const used = new Set(Array.from({ length: 400 }, (_, i) => partitionIndexForKey(`EVENT-${i}`, 4)));
    expect(used).toEqual(new Set([0, 1, 2, 3]));
  });
});
