// Deterministic record ids: the same (AgentId, VmId, EventId, EventStatus) always yields the same id, across restarts;
// the persisted AgentId keeps ids unique across VMs even when instance metadata was unavailable (VmId "").
import { hash } from "node:crypto";

/** Formats the first 16 bytes of a SHA-256 digest of `parts` as a name-based (version 8) UUID. */
export function deterministicUuid(...parts: string[]): string {
  // One-shot: no native hash object is left for the garbage collector to free (records are made on every change).
  const bytes = hash("sha256", parts.join("\u001f"), "buffer").subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x80; // version 8 (custom, name-based)
  bytes[8] = (bytes[8]! & 0x3f) | 0x80; // RFC 9562 variant
  const hex = bytes.toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The part of every RecordId that names where a record comes from: this installation and this VM. */
export function recordSource(identity: { AgentId: string; VmId: string }): string {
  return `${identity.AgentId}\u001f${identity.VmId}`;
}

/** RecordId of a transition, as the contract defines it; `source` is `recordSource(identity)`. */
export function transitionRecordId(source: string, eventId: string, status: string): string {
  return deterministicUuid("Transition", source, eventId.toLowerCase(), status);
}
