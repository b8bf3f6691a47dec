// Is a discovered address really IMDS? One GET of the Scheduled Events API (Metadata header, no proxy, a deadline, a
// body cap): trusted only when it answers 200 with a well-formed Scheduled Events document.
import { request } from "node:http";
import { parseScheduledEventsDocument } from "../document.js";

export type Verify = (
  url: string,
  apiVersion: string,
  timeoutMs: number,
  signal?: AbortSignal,
) => Promise<{ answered: boolean; detail: string }>;

/** A Scheduled Events document is small; an address sending more is not IMDS. */
export const maxVerifyBodyBytes = 256 * 1024;

/** What a failed verification says (bounded: a rogue server's text is never quoted at length). */
const clip = (text: string): string => (text.length <= 120 ? text : `${text.slice(0, 119)}…`);

export const scheduledEventsVerify: Verify = (url, apiVersion, timeoutMs, signal) =>
  new Promise((resolve) => {
    const deadline = AbortSignal.timeout(timeoutMs);
    const abort = signal ? AbortSignal.any([deadline, signal]) : deadline;
    let settled = false;
    const done = (answered: boolean, detail: string): void => {
      if (settled) return;
      settled = true;
      req.destroy();
      resolve({ answered, detail: clip(detail) });
    };
    const path = `/metadata/scheduledevents?api-version=${encodeURIComponent(apiVersion)}`;
    const req = request(new URL(path, url), { headers: { Metadata: "true" }, agent: false, signal: abort }, (res) => {
      if (res.statusCode !== 200) return done(false, `the Scheduled Events API answered HTTP ${res.statusCode}`);
      const parts: Buffer[] = [];
      let size = 0;
      res.on("data", (chunk: Buffer) => {
        size += chunk.length;
        if (size > maxVerifyBodyBytes) done(false, `the Scheduled Events answer exceeds ${maxVerifyBodyBytes} bytes`);
        else parts.push(chunk);
      });
      res.on("error", (err) => done(false, err.message));
      res.on("end", () => {
        try {
          parseScheduledEventsDocument(Buffer.concat(parts).toString("utf8"));
          done(true, "answered a Scheduled Events document");
        } catch (err) {
          done(false, `not a Scheduled Events document: ${(err as Error).message}`);
        }
      });
    });
    req.on("error", (err: NodeJS.ErrnoException) =>
      done(false, deadline.aborted ? `no answer within ${timeoutMs} ms` : (err.code ?? err.message)),
    );
    req.end();
  });
