// The Event Hubs peer's namespace tiers and default consumer group: plain constants, apart from the server so that a
// command line can name them without loading the AMQP stack.
export const defaultConsumerGroup = "$Default";
export const eventHubsTiers = ["basic", "standard", "premium", "dedicated"] as const;
export type EventHubsTier = (typeof eventHubsTiers)[number];
/** Largest event or batch each tier accepts, in bytes (Azure Event Hubs quotas). */
export const maxMessageSizeByTier: Readonly<Record<EventHubsTier, number>> = {
  basic: 256 * 1024,
  standard: 1024 * 1024,
  premium: 1024 * 1024,
  dedicated: 1024 * 1024,
};
