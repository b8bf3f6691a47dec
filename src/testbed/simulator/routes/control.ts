// The test-only control API under /__sim/: the status, replacing the document, jumping scenario time forward.
import type { IncomingMessage, ServerResponse } from "node:http";
import { z } from "zod";
import { HttpError, readJsonBody, sendJson } from "../http.js";
import { scenarioEventSchema } from "../scenario-schema.js";
import type { SimRoute } from "../imds-request.js";
import { advance, setEvents, status, type SimState } from "../sim-state.js";

const setEventsSchema = z.object({ Events: z.array(scenarioEventSchema) });
const advanceSchema = z.object({ seconds: z.number().min(0) });

export async function serveControl(
  state: SimState,
  req: IncomingMessage,
  res: ServerResponse,
  route: SimRoute,
): Promise<string> {
  if (route === "sim-status") sendJson(res, 200, status(state));
  else if (route === "sim-document") {
    const body = await readJsonBody(req, setEventsSchema, "Body");
    try {
      const result = setEvents(state, body.Events);
      sendJson(res, 200, { changedAtMs: result.changedAtMs, DocumentIncarnation: result.incarnation });
    } catch (err) {
      throw new HttpError(400, { error: (err as Error).message });
    }
  } else {
    const body = await readJsonBody(req, advanceSchema, "Body");
    sendJson(res, 200, advance(state, body.seconds));
  }
  return "200";
}
