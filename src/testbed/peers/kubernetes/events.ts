// Events in both API groups over one store: core/v1 `events` and events.k8s.io/v1 `events` (create, list in a
// namespace or all, get, PATCH, DELETE); an event created through one group is listed through the other.
import { isDryRun, requireObjectBody, type ApiRequest, type ApiResponse, type Cluster } from "./api.js";
import { fromEventsV1, normalizeEventTimes, toEventsV1 } from "./event-convert.js";
import { eventCreateCauses } from "./event-validation.js";
import { listAnswer, objectAnswer } from "./lists.js";
import { randomNameSuffix, type KubeObject } from "./objects.js";
import { alreadyExists, badRequest, invalid, methodNotAllowed, notFound } from "./status.js";
import { patchObject } from "./updates.js";

const coreFields = [
  "metadata.name",
  "metadata.namespace",
  "involvedObject.kind",
  "involvedObject.namespace",
  "involvedObject.name",
  "involvedObject.uid",
  "involvedObject.apiVersion",
  "involvedObject.resourceVersion",
  "involvedObject.fieldPath",
  "reason",
  "reportingComponent",
  "source",
  "type",
];
const v1Fields = [
  "metadata.name",
  "metadata.namespace",
  "regarding.kind",
  "regarding.namespace",
  "regarding.name",
  "regarding.uid",
  "regarding.apiVersion",
  "regarding.resourceVersion",
  "regarding.fieldPath",
  "reason",
  "reportingController",
  "type",
];

function createEvent(request: ApiRequest, cluster: Cluster, eventsV1: boolean): ApiResponse {
  const namespace = request.namespace;
  if (namespace === undefined) throw methodNotAllowed();
  const raw = requireObjectBody(request);
  const core = normalizeEventTimes(
    eventsV1 ? fromEventsV1(raw) : { ...raw, apiVersion: "v1", kind: "Event" },
  ) as unknown as KubeObject;
  const metadata = { ...((raw.metadata ?? {}) as Partial<KubeObject["metadata"]>) };
  if (metadata.namespace && metadata.namespace !== namespace)
    throw badRequest("the namespace of the provided object does not match the namespace sent on the request");
  const name = metadata.name || (metadata.generateName ? `${metadata.generateName}${randomNameSuffix()}` : "");
  const group = eventsV1 ? "events.k8s.io" : "";
  if (!name)
    throw invalid(
      "Event",
      "",
      [
        {
          field: "metadata.name",
          reason: "FieldValueRequired",
          message: "Required value: name or generateName is required",
        },
      ],
      group,
    );
  const causes = eventCreateCauses(core as never, namespace, eventsV1);
  if (causes.length > 0) throw invalid("Event", name, causes, group);
  if (!cluster.store.hasNamespace(namespace)) throw notFound("namespaces", namespace);
  if (cluster.store.get("events", namespace, name)) throw alreadyExists("events", name, group);
  const { uid: _uid, resourceVersion: _rv, creationTimestamp: _created, ...fresh } = metadata;
  const event = { ...core, metadata: { ...fresh, name, namespace } };
  const stored = isDryRun(request) ? (event as KubeObject) : cluster.store.create("events", event);
  return { code: 201, body: eventsV1 ? toEventsV1(stored) : stored };
}

function handleEvents(request: ApiRequest, cluster: Cluster, eventsV1: boolean): ApiResponse {
  const view = (event: KubeObject): KubeObject => (eventsV1 ? toEventsV1(event) : event);
  const group = eventsV1 ? "events.k8s.io" : "";
  if (request.subresource !== undefined) throw notFound("events", `${request.name}/${request.subresource}`, group);
  if (request.name === undefined) {
    if (request.method === "POST") return createEvent(request, cluster, eventsV1);
    if (request.method !== "GET") throw methodNotAllowed();
    const shape = {
      resource: "events",
      apiVersion: eventsV1 ? "events.k8s.io/v1" : "v1",
      listKind: "EventList",
      selectableFields: eventsV1 ? v1Fields : coreFields,
      watch: { kind: "events" as const, view },
    };
    return listAnswer(request, cluster, shape, cluster.store.list("events", request.namespace).map(view));
  }
  const event = cluster.store.get("events", request.namespace, request.name);
  if (!event) throw notFound("events", request.name, group);
  switch (request.method) {
    case "GET":
      return objectAnswer(request, cluster, "events", view(event));
    case "PATCH":
      if (eventsV1) throw methodNotAllowed();
      return {
        code: 200,
        body: patchObject(request, cluster, { kind: "events", resource: "events", group, objectKind: "Event" }),
      };
    case "DELETE":
      if (!isDryRun(request)) cluster.store.remove("events", request.namespace, request.name);
      return { code: 200, body: view(event) };
    default:
      throw methodNotAllowed();
  }
}

export function handleCoreEvents(request: ApiRequest, cluster: Cluster): ApiResponse {
  return handleEvents(request, cluster, false);
}

export function handleEventsV1(request: ApiRequest, cluster: Cluster): ApiResponse {
  return handleEvents(request, cluster, true);
}
