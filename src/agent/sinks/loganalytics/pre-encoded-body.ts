// Encoding once: the rows of a Logs Ingestion request are already JSON in the outbox, so the request body is built by
// joining them. The SDK's upload() would stringify every row twice more (to size its chunks, then as the body); it
// gets one small placeholder row instead, and a pipeline policy of the Serialize phase — before the SDK's own gzip
// policy — swaps the placeholder body for the prepared one.
import { randomUUID } from "node:crypto";
import type { PipelinePolicy } from "@azure/core-rest-pipeline";
import { InternalError } from "@sef/errors/sef-error.js";

const placeholderKey = "sef-pre-encoded-body";

export class PreEncodedBodies {
  private readonly waiting = new Map<string, { body: string; swapped: boolean }>();

  /** The policy to add to the client's pipeline with `{ phase: "Serialize" }`. */
  readonly policy: PipelinePolicy = {
    name: "sefPreEncodedBody",
    sendRequest: async (request, next) => {
      const id = typeof request.body === "string" ? placeholderId(request.body) : undefined;
      const slot = id === undefined ? undefined : this.waiting.get(id);
      if (slot) {
        request.body = slot.body;
        slot.swapped = true;
      }
      return next(request);
    },
  };

  /**
   * Runs `send` with a placeholder row standing for `body`. Throws if the SDK sent a request without passing the
   * placeholder through the policy (an SDK change): the records then stay pending instead of counting as delivered.
   */
  async upload(body: string, send: (placeholder: Record<string, unknown>) => Promise<void>): Promise<void> {
    const id = randomUUID();
    const slot = { body, swapped: false };
    this.waiting.set(id, slot);
    try {
      await send({ [placeholderKey]: id });
    } finally {
      this.waiting.delete(id);
    }
    if (!slot.swapped)
      throw new InternalError(
        "internal: the Logs Ingestion request was sent without its prepared body (SDK pipeline changed?)",
      );
  }
}

/** The id in a body that is exactly the SDK's serialization of one placeholder row, else undefined. */
function placeholderId(body: string): string | undefined {
  const match = /^\[\{"sef-pre-encoded-body":"([0-9a-f-]{36})"\}\]$/.exec(body);
  return match?.[1];
}
