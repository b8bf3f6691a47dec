// The testbed's DHCP responder (option 245, the Azure host address), for discovery tests and experiments.
export {
  startDhcpResponder,
  buildReply,
  dhcpReplyKinds,
  type DhcpResponder,
  type DhcpResponderOptions,
  type DhcpReplyKind,
} from "./responder.js";
