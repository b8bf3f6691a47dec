// The cluster-wide cap on nodes draining at once (I/O): a semaphore of `limit` coordination.k8s.io Leases
// (`sef-drain-0` … `sef-drain-<limit-1>`) in one namespace; a node drains while it holds one (holderIdentity = its
// name), renews it while it drains and frees it after; a slot whose holder stopped renewing is free once its
// leaseDurationSeconds have passed (a node that died mid-drain holds nothing for long).
import type { Logger } from "pino";
import type { Clock } from "@sef/runtime/clock.js";
import type { KubeApi, LeaseView } from "./client.js";
import { leaseBody } from "./views.js";

/** The Lease names of the slots: `sef-drain-<n>`. */
export const drainSlotPrefix = "sef-drain-";

export interface DrainSlotsOptions {
  api: () => Pick<KubeApi, "readLease" | "writeLease">;
  nodeName: string;
  namespace: string;
  limit: number;
  leaseDurationSeconds: number;
  clock: Clock;
  logger: Logger;
}

/** Whether a slot can be taken by `nodeName`: free (no holder, or its holder stopped renewing), or its own already. */
export function slotOpenTo(lease: LeaseView, nodeName: string, nowMs: number): boolean {
  if (lease.holderIdentity === "" || lease.holderIdentity === nodeName) return true;
  return lease.renewTimeMs + lease.leaseDurationSeconds * 1000 < nowMs;
}

export class DrainSlots {
  /** The slot this node holds, if any. */
  private held: string | undefined;
  private renewedAtMs = 0;

  constructor(private readonly options: DrainSlotsOptions) {}

  get holding(): string | undefined {
    return this.held;
  }

  /** Takes a free slot (or renews this node's own); true when this node holds one. */
  async acquire(): Promise<boolean> {
    const { limit } = this.options;
    if (this.held !== undefined && (await this.take(this.held))) return true;
    for (let n = 0; n < limit; n++) if (await this.take(`${drainSlotPrefix}${n}`)) return true;
    this.held = undefined;
    return false;
  }

  /** Renews the slot held when a third of its duration has passed since the last renewal. */
  async renewIfDue(): Promise<void> {
    const { clock, leaseDurationSeconds, logger } = this.options;
    if (this.held === undefined || clock.monotonicMs() - this.renewedAtMs < (leaseDurationSeconds * 1000) / 3) return;
    if (!(await this.take(this.held)))
      logger.warn({ lease: this.held }, "the drain slot was taken by another node; draining on without it");
  }

  /** Frees the slot held (its holder removed); a slot another node holds by now is left alone. */
  async release(): Promise<void> {
    const name = this.held;
    if (name === undefined) return;
    this.held = undefined;
    const { api, namespace, nodeName, clock, leaseDurationSeconds } = this.options;
    const lease = await api().readLease(namespace, name);
    if (lease === undefined || lease.holderIdentity !== nodeName) return;
    const body = leaseBody(namespace, name, "", leaseDurationSeconds, clock.now(), lease.resourceVersion);
    await api().writeLease(namespace, name, body, lease.resourceVersion);
  }

  /** Takes (or renews) the slot when it is open to this node; false when another node holds it or wrote first. */
  private async take(name: string): Promise<boolean> {
    const { api, namespace, nodeName, clock, leaseDurationSeconds } = this.options;
    const lease = await api().readLease(namespace, name);
    if (lease !== undefined && !slotOpenTo(lease, nodeName, clock.now())) return false;
    const body = leaseBody(namespace, name, nodeName, leaseDurationSeconds, clock.now(), lease?.resourceVersion);
    if (!(await api().writeLease(namespace, name, body, lease?.resourceVersion))) return false;
    this.held = name;
    this.renewedAtMs = clock.monotonicMs();
    return true;
  }
}
