// Watches (`?watch=true` on a list): a chunked stream of {"type","object"} lines for the changes the store records.
// No resourceVersion (or "0"): the current objects as ADDED first; a resourceVersion: the remembered changes after it
// (410 Expired in an ERROR event when they were forgotten); then live changes until timeoutSeconds or close.
import type { ServerResponse } from "node:http";
import type { KubeObject } from "./objects.js";
import { failure } from "./status.js";
import type { ClusterStore, ResourceKind, StoreChange } from "./store.js";
import { tableOf } from "./tables.js";

/** Longest a watch stays open when the client sets no timeoutSeconds (the API server picks 30-60 min). */
export const defaultWatchTimeoutMs = 30 * 60_000;

export interface WatchRequest {
  readonly kind: ResourceKind;
  readonly namespace?: string;
  /** Field and label selectors, applied to the object as the client sees it. */
  readonly matches: (object: KubeObject) => boolean;
  /** The client's view of a stored object (events.k8s.io/v1 for that group's events). */
  readonly view: (object: KubeObject) => KubeObject;
  /** Undefined: start with the current objects as ADDED. */
  readonly sinceResourceVersion?: number;
  /** Objects to send as ADDED first (already viewed and filtered), when sinceResourceVersion is undefined. */
  readonly initial: readonly KubeObject[];
  readonly timeoutMs: number;
  /** Resource name when the client asked for Table objects (kubectl get -w). */
  readonly tableResource?: string;
}

/** Streams the watch on `response`; returns the function that ends it (also called on timeout and disconnect). */
export function streamWatch(response: ServerResponse, store: ClusterStore, watch: WatchRequest): () => void {
  response.writeHead(200, {
    "content-type": "application/json",
    "cache-control": "no-cache, private",
    "transfer-encoding": "chunked",
  });
  const render = (object: KubeObject): unknown =>
    watch.tableResource
      ? tableOf(watch.tableResource, [object], store.clock.wallNowMs(), object.metadata.resourceVersion)
      : object;
  const send = (type: string, object: unknown): void => {
    response.write(`${JSON.stringify({ type, object })}\n`);
  };
  const deliver = (change: StoreChange): void => {
    const event = watchEvent(watch, change);
    if (event && !ended) send(event.type, render(event.object));
  };
  let ended = false;
  let unsubscribe = (): void => undefined;
  const timer = setTimeout(() => end(), watch.timeoutMs);
  const end = (): void => {
    if (ended) return;
    ended = true;
    clearTimeout(timer);
    unsubscribe();
    response.end();
  };
  response.on("close", end);
  if (watch.sinceResourceVersion === undefined) {
    for (const object of watch.initial) send("ADDED", render(object));
  } else {
    const replay = store.changesSince(watch.sinceResourceVersion);
    if (!replay) {
      send(
        "ERROR",
        failure(
          410,
          "Expired",
          `too old resource version: ${watch.sinceResourceVersion} (${store.currentResourceVersion()})`,
        ),
      );
      end();
      return end;
    }
    for (const change of replay) deliver(change);
  }
  unsubscribe = store.subscribe(deliver);
  return end;
}

/**
 * What a watch reports for a change, as the API server's filtered watch does: a MODIFIED object that starts matching
 * the selectors is ADDED, one that stops matching is DELETED; changes of other kinds, namespaces or objects are none.
 */
export function watchEvent(
  watch: Pick<WatchRequest, "kind" | "namespace" | "matches" | "view">,
  change: StoreChange,
): { type: StoreChange["type"]; object: KubeObject } | undefined {
  if (change.kind !== watch.kind) return undefined;
  if (watch.namespace !== undefined && change.object.metadata.namespace !== watch.namespace) return undefined;
  const object = watch.view(change.object);
  const matchesNow = watch.matches(object);
  if (change.type !== "MODIFIED" || !change.previous) return matchesNow ? { type: change.type, object } : undefined;
  const matchedBefore = watch.matches(watch.view(change.previous));
  if (matchesNow) return { type: matchedBefore ? "MODIFIED" : "ADDED", object };
  return matchedBefore ? { type: "DELETED", object } : undefined;
}
