// Pure validation of an Event create, as the API server applies it: the legacy rules for every request (namespace
// agreement; reporting fields once eventTime is set) and the strict events.k8s.io/v1 rules on top.
import type { StatusCause } from "./status.js";

export interface CoreEventFields {
  metadata?: { namespace?: string };
  involvedObject?: { namespace?: string; [key: string]: unknown };
  eventTime?: string | null;
  reportingComponent?: string;
  reportingInstance?: string;
  action?: string;
  reason?: string;
  message?: string;
  type?: string;
  firstTimestamp?: string | null;
  lastTimestamp?: string | null;
  count?: number;
  source?: { component?: string; host?: string };
}

const required = (field: string): StatusCause => ({ field, reason: "FieldValueRequired", message: "Required value" });
const invalidValue = (field: string, value: string, why: string): StatusCause => ({
  field,
  reason: "FieldValueInvalid",
  message: `Invalid value: "${value}": ${why}`,
});

function legacyCauses(event: CoreEventFields, namespace: string, eventsV1: boolean): StatusCause[] {
  const causes: StatusCause[] = [];
  const involvedNamespace = event.involvedObject?.namespace ?? "";
  if (!event.eventTime) {
    const agrees =
      involvedNamespace === "" ? namespace === "" || namespace === "default" : namespace === involvedNamespace;
    if (!agrees)
      causes.push(invalidValue("involvedObject.namespace", involvedNamespace, "does not match event.namespace"));
    return causes;
  }
  if (involvedNamespace === "" && namespace !== "default" && namespace !== "kube-system") {
    causes.push(invalidValue("involvedObject.namespace", involvedNamespace, "does not match event.namespace"));
  }
  if (!event.reportingComponent) causes.push(required(eventsV1 ? "reportingController" : "reportingComponent"));
  if (!event.reportingInstance) causes.push(required("reportingInstance"));
  if (!event.action) causes.push(required("action"));
  if (!event.reason) causes.push(required("reason"));
  if ((event.message ?? "").length > 1024)
    causes.push({
      field: eventsV1 ? "note" : "message",
      reason: "FieldValueTooLong",
      message: "Too long: may not be more than 1024 bytes",
    });
  return causes;
}

function strictCauses(event: CoreEventFields): StatusCause[] {
  const causes: StatusCause[] = [];
  if (!event.eventTime) causes.push(required("eventTime"));
  if (event.type !== "Normal" && event.type !== "Warning")
    causes.push(invalidValue("type", "", `has invalid value: ${event.type ?? ""}`));
  if (event.firstTimestamp) causes.push(invalidValue("deprecatedFirstTimestamp", "", "needs to be unset"));
  if (event.lastTimestamp) causes.push(invalidValue("deprecatedLastTimestamp", "", "needs to be unset"));
  if (event.count) causes.push(invalidValue("deprecatedCount", "", "needs to be unset"));
  if (event.source?.component || event.source?.host)
    causes.push(invalidValue("deprecatedSource", "", "needs to be unset"));
  return causes;
}

/** Causes for a 422 (empty when valid); `event` is in the stored core/v1 shape. */
export function eventCreateCauses(event: CoreEventFields, namespace: string, eventsV1: boolean): StatusCause[] {
  return [...legacyCauses(event, namespace, eventsV1), ...(eventsV1 ? strictCauses(event) : [])];
}
