// Link addresses of the local Event Hubs peer, as clients attach to them: `$cbs`, `$management`, `hub`,
// `hub/Partitions/N`, `hub/ConsumerGroups/CG/Partitions/N`, each optionally as `amqps://host[:port]/…`. Pure logic.

export type NodeAddress =
  | { readonly kind: "cbs" }
  | { readonly kind: "management" }
  /** A producer's target: the hub, or one partition of it. */
  | { readonly kind: "hub"; readonly entityPath: string; readonly partitionId: string | undefined }
  /** A consumer's source: one partition seen through one consumer group. */
  | {
      readonly kind: "consumer";
      readonly entityPath: string;
      readonly consumerGroup: string;
      readonly partitionId: string;
    }
  | { readonly kind: "unknown"; readonly entityPath: string };

/** The entity path of an address: no scheme, host or surrounding slashes (`amqps://h:1/Hub/Partitions/0` → `Hub/Partitions/0`). */
export function entityPathOf(address: string): string {
  const withoutScheme = /^[a-z][a-z0-9+.-]*:\/\/[^/]*(\/.*)?$/i.exec(address);
  const path = withoutScheme ? (withoutScheme[1] ?? "") : address;
  return path.replace(/^\/+/, "").replace(/\/+$/, "");
}

/** Classifies a link address for the hub `hubName` (names compare case-insensitively, as in the service). */
export function parseNodeAddress(address: string, hubName: string): NodeAddress {
  const entityPath = entityPathOf(address);
  const parts = entityPath.split("/");
  const lower = parts.map((p) => p.toLowerCase());
  const hub = hubName.toLowerCase();
  if (entityPath === "$cbs") return { kind: "cbs" };
  if (entityPath === "$management" || (lower.length === 2 && lower[0] === hub && lower[1] === "$management"))
    return { kind: "management" };
  if (lower[0] !== hub) return { kind: "unknown", entityPath };
  if (parts.length === 1) return { kind: "hub", entityPath, partitionId: undefined };
  if (parts.length === 3 && lower[1] === "partitions") return { kind: "hub", entityPath, partitionId: parts[2]! };
  if (parts.length === 5 && lower[1] === "consumergroups" && lower[3] === "partitions") {
    return { kind: "consumer", entityPath, consumerGroup: parts[2]!, partitionId: parts[4]! };
  }
  return { kind: "unknown", entityPath };
}
