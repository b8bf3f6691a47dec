// Is a discovered address really IMDS? One GET of the Scheduled Events API through the IMDS client itself (Metadata
// header, no proxy, a deadline, a body cap, the document's parser): trusted only when it answers 200 with a
// well-formed Scheduled Events document.
import { ImdsClient } from "../client.js";
import { systemClock } from "@sef/runtime/clock.js";
import type { CandidateCheck } from "./probe.js";

export type Verify = CandidateCheck<[url: string, apiVersion: string]>;

/** A Scheduled Events document is small; an address sending more is not IMDS. */
export const maxVerifyBodyBytes = 256 * 1024;

/** What a failed verification says (bounded: a rogue server's text is never quoted at length). */
const clip = (text: string): string => (text.length <= 120 ? text : `${text.slice(0, 119)}…`);

export const scheduledEventsVerify: Verify = async (url, apiVersion, timeoutMs, signal) => {
  const client = new ImdsClient({
    imdsUrl: url,
    apiVersion,
    clock: systemClock,
    firstCallTimeoutMs: timeoutMs,
    connectTimeoutMs: timeoutMs,
    maxBodyBytes: maxVerifyBodyBytes,
  });
  try {
    await client.getScheduledEvents(signal);
    return { answered: true, detail: "answered a Scheduled Events document" };
  } catch (err) {
    return { answered: false, detail: clip((err as Error).message) };
  } finally {
    await client.close(0);
  }
};
