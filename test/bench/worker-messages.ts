// The benches' peers run in worker threads and answer with messages `{ kind, ... }`: waits for the next message of one
// kind, with a deadline (a worker that never answers fails the bench instead of hanging it).
import type { Worker } from "node:worker_threads";

export function nextWorkerMessage(worker: Worker, kind: string, timeoutMs = 30_000): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      worker.off("message", onMessage);
      reject(new Error(`peer worker: no ${kind} within ${timeoutMs} ms`));
    }, timeoutMs);
    const onMessage = (message: Record<string, unknown>): void => {
      if (message.kind !== kind) return;
      clearTimeout(timer);
      worker.off("message", onMessage);
      resolve(message);
    };
    worker.on("message", onMessage);
  });
}
