// `$management` READ requests of the local Event Hubs peer (hub and partition properties), as request → response
// values with the property names and types @azure/event-hubs reads. Pure logic.
import type { HubStore } from "./store.js";

export interface ManagementResponse {
  readonly statusCode: number;
  readonly statusDescription: string;
  readonly errorCondition?: string;
  readonly body?: Record<string, unknown>;
}

export interface HubDescription {
  readonly hubName: string;
  readonly createdAt: Date;
  readonly store: HubStore;
}

/** Answers one `$management` request from its application properties. */
export function answerManagementRequest(
  properties: Record<string, unknown> | undefined,
  hub: HubDescription,
): ManagementResponse {
  const operation = properties?.["operation"];
  const type = properties?.["type"];
  const name = properties?.["name"];
  if (operation !== "READ") {
    return {
      statusCode: 400,
      statusDescription: `unsupported operation "${String(operation)}"`,
      errorCondition: "com.microsoft:argument-error",
    };
  }
  if (typeof name !== "string" || name.toLowerCase() !== hub.hubName.toLowerCase()) {
    return {
      statusCode: 404,
      statusDescription: `The messaging entity '${String(name)}' could not be found.`,
      errorCondition: "amqp:not-found",
    };
  }
  if (type === "com.microsoft:eventhub") {
    return {
      statusCode: 200,
      statusDescription: "OK",
      body: {
        name: hub.hubName,
        type: "com.microsoft:eventhub",
        created_at: hub.createdAt,
        partition_count: hub.store.partitionIds.length,
        partition_ids: [...hub.store.partitionIds],
      },
    };
  }
  if (type === "com.microsoft:partition") {
    const partition = String(properties?.["partition"]);
    if (!hub.store.hasPartition(partition)) {
      return {
        statusCode: 400,
        statusDescription: `The specified partition '${partition}' is invalid for an EventHub partition sender or receiver.`,
        errorCondition: "com.microsoft:argument-out-of-range",
      };
    }
    const info = hub.store.info(partition);
    return {
      statusCode: 200,
      statusDescription: "OK",
      body: {
        name: hub.hubName,
        type: "com.microsoft:partition",
        partition,
        begin_sequence_number: info.beginSequenceNumber,
        last_enqueued_sequence_number: info.lastEnqueuedSequenceNumber,
        last_enqueued_offset: info.lastEnqueuedOffset,
        last_enqueued_time_utc: new Date(info.lastEnqueuedTimeMs),
        is_partition_empty: info.isEmpty,
      },
    };
  }
  return {
    statusCode: 400,
    statusDescription: `unsupported entity type "${String(type)}"`,
    errorCondition: "com.microsoft:argument-error",
  };
}
