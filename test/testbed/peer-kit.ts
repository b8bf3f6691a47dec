// What the Kubernetes peer's tests share: a peer per test (started by the test, closed after it within a deadline),
// and the Status a handler function threw.
import { afterEach } from "vitest";
import {
  startKubernetesPeer,
  type KubernetesPeer,
  type KubernetesPeerOptions,
  type KubernetesSeed,
} from "../../src/testbed/peers/kubernetes/index.js";
import { StatusError, type Status } from "../../src/testbed/peers/kubernetes/status.js";

/** Registers the closing of the test's peer after each test; returns the function that starts it. */
export function peerPerTest(): (
  seed: KubernetesSeed,
  options?: Omit<KubernetesPeerOptions, "seed">,
) => Promise<KubernetesPeer> {
  let peer: KubernetesPeer | undefined;
  afterEach(async () => {
    await peer?.close(2_000);
    peer = undefined;
  });
  return async (seed, options = {}) => {
    peer = await startKubernetesPeer({ ...options, seed });
    return peer;
  };
}

/** The Status `thrower` threw (fails when it throws something else or nothing). */
export function statusOf(thrower: () => unknown): Status {
  try {
    thrower();
  } catch (error) {
    if (error instanceof StatusError) return error.status;
    throw error;
  }
  throw new Error("expected a StatusError");
}
