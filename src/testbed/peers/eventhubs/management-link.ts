// `$management` requests on the wire: a connection without a token for this hub is refused, the answer itself is pure
// (management.ts), and it goes back on the reply link (requests.ts).
import type { EventContext, Message } from "rhea";
import { answerManagementRequest } from "./management.js";
import { holdsHubToken } from "./cbs.js";
import { reply } from "./requests.js";
import { textProperties, type Peer } from "./peer.js";

export function handleManagement(peer: Peer, context: EventContext, message: Message): void {
  const answer = holdsHubToken(peer, context.connection)
    ? answerManagementRequest(textProperties(message.application_properties), {
        hubName: peer.hubName,
        createdAt: peer.createdAt,
        store: peer.store,
      })
    : {
        statusCode: 401,
        statusDescription: "Unauthorized: no valid token for this hub",
        errorCondition: "amqp:unauthorized-access",
        body: undefined,
      };
  const properties: Record<string, unknown> = {
    "status-code": answer.statusCode,
    "status-description": answer.statusDescription,
  };
  if (answer.errorCondition) properties["error-condition"] = answer.errorCondition;
  reply(peer, context, message, { application_properties: properties, body: answer.body });
}
