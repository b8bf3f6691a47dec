// Claims-based security (`$cbs` put-token): a valid SAS token grants the connection its entity path; the token checks
// themselves are pure (cbs-auth.ts).
import type { Connection, EventContext, Message } from "rhea";
import { checkPutToken, pathCovers } from "./cbs-auth.js";
import { reply } from "./requests.js";
import { stateOf, textProperties, type Peer } from "./peer.js";

export function handleCbs(peer: Peer, context: EventContext, message: Message): void {
  const properties = textProperties(message.application_properties);
  if (properties["operation"] !== "put-token") {
    reply(peer, context, message, {
      body: undefined,
      application_properties: { "status-code": 400, "status-description": "unsupported $cbs operation" },
    });
    return;
  }
  const check = checkPutToken(
    { name: properties["name"], type: properties["type"], token: message.body },
    { hubName: peer.hubName, sharedAccessKey: peer.sharedAccessKey, nowMs: Date.now() },
  );
  if (check.ok) {
    stateOf(peer, context.connection).grantedPaths.add(check.entityPath);
    reply(peer, context, message, {
      body: undefined,
      application_properties: { "status-code": 202, "status-description": "Accepted" },
    });
  } else {
    peer.logger.info({ reason: check.reason, type: properties["type"], name: properties["name"] }, "put-token refused");
    reply(peer, context, message, {
      body: undefined,
      application_properties: {
        "status-code": 401,
        "status-description": `Unauthorized: ${check.reason}`,
        "error-condition": "amqp:unauthorized-access",
      },
    });
  }
}

/** Whether the connection holds a token covering `entityPath`. */
export function isAuthorized(peer: Peer, connection: Connection, entityPath: string): boolean {
  for (const granted of stateOf(peer, connection).grantedPaths) if (pathCovers(granted, entityPath)) return true;
  return false;
}

/** `$management` needs a token for any entity of this hub (the SDK puts one for `hub/$management`). */
export function holdsHubToken(peer: Peer, connection: Connection): boolean {
  for (const granted of stateOf(peer, connection).grantedPaths)
    if (pathCovers(peer.hubName.toLowerCase(), granted)) return true;
  return false;
}
